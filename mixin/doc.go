// Package mixin holds no Go code: its directory is pvlock's Prometheus
// mixin, the recording rules (rules/rules.yml), alerts (alerts/alerts.yml),
// their promtool unit tests (tests/) and a Grafana dashboard
// (dashboards/pvlock.json) for the metrics of the pvlock/metrics
// Collector. README.md says how to vendor and load them. The package's
// tests run promtool on the rules and check the rules and the dashboard
// against the metrics the Collector exports.
package mixin
