{{/*
Refusals at install time for the DRA driver's pools (plugin.mode dra or both):
- a shared pool: with DRA, pods share a port by sharing a ResourceClaim;
- plugin.mode both with pools the device plugin's config selects as well: the two do not
  see each other's allocations, so such a device could go to two pods. An empty
  plugin.dra.config (the same pools) is refused, and so is a pair of pools whose
  selectors evidently overlap: one of them is empty (every device), or every list both
  set has an entry in common. The binaries check the rest on the node (--other-config).
*/}}
{{- define "ringcap.dra.check" -}}
{{- $pl := .Values.plugin -}}
{{- $from := ternary "plugin.dra.config" "plugin.config" (not (empty $pl.dra.config)) -}}
{{- $cfg := $pl.dra.config | default $pl.config -}}
{{- range $i, $p := ($cfg.pools | default list) -}}
{{- if eq ((($p.sharing | default dict).mode) | default "") "shared" -}}
{{- fail (printf "%s pools[%d] (%s): sharing mode shared does not apply to the DRA driver: pods share a port by sharing a ResourceClaim; give the driver exclusive pools (plugin.dra.config)" $from $i $p.name) -}}
{{- end -}}
{{- end -}}
{{- if eq $pl.mode "both" -}}
{{- if empty $pl.dra.config -}}
{{- fail "plugin.mode both needs plugin.dra.config: the device plugin and the DRA driver do not see each other's allocations, so the same pools would offer every device twice. Set plugin.dra.config to pools whose selectors pick other devices than plugin.config's, e.g. plugin.config selector {drivers: [mlx5_core]} and plugin.dra.config selector {drivers: [rdma_rxe]}" -}}
{{- end -}}
{{- range $a := ($pl.config.pools | default list) -}}
{{- range $b := ($pl.dra.config.pools | default list) -}}
{{- $why := include "ringcap.selectorsOverlap" (list ($a.selector | default dict) ($b.selector | default dict)) -}}
{{- if $why -}}
{{- fail (printf "plugin.mode both: plugin.config pool %q and plugin.dra.config pool %q select the same devices (%s), which would be offered both as ringcap.io/%s and in the DRA driver's ResourceSlice; give them selectors with a devices, drivers or vendors list that has no entry in common" $a.name $b.name $why $a.name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Why two pool selectors (list a b) evidently select the same devices, or "". */}}
{{- define "ringcap.selectorsOverlap" -}}
{{- $a := index . 0 -}}
{{- $b := index . 1 -}}
{{- $setA := list -}}
{{- $setB := list -}}
{{- $agree := list -}}
{{- $apart := false -}}
{{- range $f := list "devices" "drivers" "vendors" "linkLayers" "netdevs" -}}
{{- $la := get $a $f | default list -}}
{{- $lb := get $b $f | default list -}}
{{- if $la }}{{ $setA = append $setA $f }}{{ end -}}
{{- if $lb }}{{ $setB = append $setB $f }}{{ end -}}
{{- if and $la $lb -}}
{{- $hit := false -}}
{{- range $la }}{{ if has . $lb }}{{ $hit = true }}{{ end }}{{ end -}}
{{- if $hit }}{{ $agree = append $agree $f }}{{ else }}{{ $apart = true }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if and (empty $setA) (empty $setB) -}}
both selectors are empty: every device
{{- else if empty $setA -}}
the first selector is empty: every device
{{- else if empty $setB -}}
the second selector is empty: every device
{{- else if and $agree (not $apart) -}}
their {{ join ", " $agree }} lists have entries in common and nothing sets them apart
{{- end -}}
{{- end -}}
