module github.com/pvlock/pvlock

go 1.26.8

require (
	github.com/prometheus/client_golang v1.25.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
