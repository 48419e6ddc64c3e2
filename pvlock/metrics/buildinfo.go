package metrics

import (
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// modulePath is pvlock's module, whose version pvlock_build_info reports.
const modulePath = "github.com/pvlock/pvlock"

const buildInfoHelp = "Always 1: the version of the pvlock module in this binary (from its build information; " +
	"(devel) for a build inside the module, unknown without build information), " +
	"its VCS revision if recorded, and the Go version."

var buildInfoDesc = prometheus.NewDesc(namespace+"_build_info", buildInfoHelp,
	[]string{"version", "revision", "goversion"}, nil)

// buildLabels returns the label values of pvlock_build_info: pvlock's
// version as the main module or as a dependency, the VCS revision the go
// command stamped (main module only), and the Go version.
var buildLabels = sync.OnceValue(func() [3]string {
	return buildLabelsOf(debug.ReadBuildInfo())
})

func buildLabelsOf(bi *debug.BuildInfo, ok bool) [3]string {
	version, revision := "unknown", ""
	if ok {
		if bi.Main.Path == modulePath {
			version = bi.Main.Version
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					revision = s.Value
				}
			}
		}
		for _, d := range bi.Deps {
			if d.Path == modulePath {
				version = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					version = d.Replace.Version
				}
			}
		}
	}
	return [3]string{version, revision, runtime.Version()}
}

func collectBuildInfo(ch chan<- prometheus.Metric) {
	l := buildLabels()
	ch <- prometheus.MustNewConstMetric(buildInfoDesc, prometheus.GaugeValue, 1, l[0], l[1], l[2])
}
