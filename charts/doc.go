// Package charts holds the tests of ringcap's Helm chart (charts/ringcap): `helm lint` and
// template tests that render the chart with representative values and check the objects a
// user would get. They need the helm binary (hack/install-tools.sh installs it); `make
// test-chart` runs them (build tag helm).
package charts
