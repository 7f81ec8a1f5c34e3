package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Label matchers of the variables: a capture's receiver metrics carry its pod's namespace
// and name (the scrape's target labels); the device plugin's and the DRA driver's carry the
// scrape's instance, one per node.
const (
	captureSel = `namespace=~"$namespace", pod=~"$pod"`
	nodeSel    = `instance=~"$instance"`
)

// variables: the data source, then namespace and pod of the captures (from
// ringcap_recv_state, which every receiver exports), then the nodes: the instances that
// export link counters (each node's device plugin or DRA driver).
func variables() []cog.Builder[dashboard.VariableModel] {
	return []cog.Builder[dashboard.VariableModel]{
		dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus"),
		labelVariable("namespace", "Namespace", `label_values(ringcap_recv_state, namespace)`),
		labelVariable("pod", "Capture pod", `label_values(ringcap_recv_state{namespace=~"$namespace"}, pod)`),
		labelVariable("instance", "Node (plugin or driver instance)", `label_values(ringcap_link_counter_total, instance)`),
	}
}

// labelVariable is a multi-value variable over a label's values, All by default.
func labelVariable(name, label, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(datasource).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{String: cog.ToPtr("All")},
			Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")},
		})
}
