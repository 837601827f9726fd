// Package monitoring reads the monitoring artefacts the operator chart ships (the alerting
// rules of files/alerts.yaml and the Grafana dashboard of files/dashboard.json) so that tests
// can check them against the metrics the operator really exports: every metric name a rule or
// a panel queries must be one the operator registers, and one a real scrape shows.
package monitoring
