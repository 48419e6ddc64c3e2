// The pvlock mixin: recording rules, alerts and a Grafana dashboard for
// the metrics of github.com/pvlock/pvlock/pvlock/metrics. The rules and the
// dashboard are kept as plain YAML and JSON (rules/, alerts/, dashboards/),
// which Prometheus and Grafana load as they are; this file offers them in
// the usual mixin fields for jsonnet users.
{
  prometheusRules+:: std.parseYaml(importstr 'rules/rules.yml'),
  prometheusAlerts+:: std.parseYaml(importstr 'alerts/alerts.yml'),
  grafanaDashboards+:: {
    'pvlock.json': import 'dashboards/pvlock.json',
  },
}
