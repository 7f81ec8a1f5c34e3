package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ringcap/ringcap/pkg/rdma"
)

// ConfigVersion is the only config file version this plugin reads.
const ConfigVersion = "v1"

// ResourcePrefix is the extended-resource domain of every pool: pool "rdma" is
// advertised as "ringcap.io/rdma".
const ResourcePrefix = "ringcap.io/"

// Sharing modes.
const (
	SharingExclusive = "exclusive" // one pod per device
	SharingShared    = "shared"    // up to MaxPodsPerDevice pods per device
)

// Config is the plugin's configuration file (YAML):
//
//	version: v1
//	rescanInterval: 1s
//	pools:
//	- name: rdma                 # advertised as ringcap.io/rdma
//	  selector:                  # every list empty: every device
//	    devices: [rxe0]          # device names
//	    drivers: [rdma_rxe]      # kernel drivers (mlx5_core, rdma_rxe, efa, ...)
//	    vendors: ["0x15b3"]      # PCI vendor IDs
//	    linkLayers: [Ethernet]   # Ethernet (RoCE), InfiniBand or Unspecified (EFA)
//	    netdevs: [veth0]         # netdevs of a port (incl. upper devices with GIDs)
//	  sharing: {mode: exclusive} # or {mode: shared, maxPodsPerDevice: 4}
//	  gidPolicy: {mode: roce-v2-ipv4}   # roce-v2-ipv6 | index (+ index: N); optional netdev
//	  charDevices: {umad: false}        # expose umadN/issmN as well
//
// Unknown fields and versions are refused, with the path of the offending field.
type Config struct {
	Version        string   `json:"version"`
	RescanInterval Duration `json:"rescanInterval,omitempty"`
	Pools          []Pool   `json:"pools"`
}

// Pool is one advertised resource.
type Pool struct {
	Name        string          `json:"name"`
	Selector    Selector        `json:"selector,omitempty"`
	Sharing     Sharing         `json:"sharing,omitempty"`
	GIDPolicy   GIDPolicyConfig `json:"gidPolicy,omitempty"`
	CharDevices CharDevices     `json:"charDevices,omitempty"`
}

// Selector picks the devices of a pool: a device matches when it matches every
// non-empty list (a list matches when any entry does).
type Selector struct {
	Devices    []string `json:"devices,omitempty"`
	Drivers    []string `json:"drivers,omitempty"`
	Vendors    []string `json:"vendors,omitempty"`
	LinkLayers []string `json:"linkLayers,omitempty"`
	Netdevs    []string `json:"netdevs,omitempty"`
}

// Sharing says how many pods may use one device at a time.
type Sharing struct {
	Mode             string `json:"mode,omitempty"` // exclusive (default) or shared
	MaxPodsPerDevice int    `json:"maxPodsPerDevice,omitempty"`
}

// GIDPolicyConfig is rdma.GIDPolicy in the config file.
type GIDPolicyConfig struct {
	Mode   string `json:"mode,omitempty"`
	Index  int    `json:"index,omitempty"`
	Netdev string `json:"netdev,omitempty"`
}

// Policy converts the config form.
func (g GIDPolicyConfig) Policy() rdma.GIDPolicy {
	return rdma.GIDPolicy{Mode: g.Mode, Index: g.Index, Netdev: g.Netdev}
}

// CharDevices says which character devices beyond uverbsN and rdma_cm a pod gets.
type CharDevices struct {
	UMad bool `json:"umad,omitempty"` // umadN and issmN of the device's ports
}

// Duration is a time.Duration written as "1s", "500ms" in the file.
type Duration struct{ time.Duration }

// UnmarshalJSON parses a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"1s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// DefaultRescanInterval is how often the plugin re-reads sysfs when the config does
// not say: port-state and GID-table changes reach the kubelet within about this.
const DefaultRescanInterval = time.Second

// DefaultConfig is used without a config file: one exclusive pool "rdma" (resource
// ringcap.io/rdma) with every RDMA device and the default GID policy.
func DefaultConfig() *Config {
	return &Config{
		Version:        ConfigVersion,
		RescanInterval: Duration{DefaultRescanInterval},
		Pools:          []Pool{{Name: "rdma", Sharing: Sharing{Mode: SharingExclusive}}},
	}
}

// FieldError is a config error at a field path ("pools[1].sharing.mode").
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

func fieldErr(path, format string, args ...any) error {
	return &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// LoadConfig reads and validates a config file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig parses and validates a YAML (or JSON) config and fills defaults.
func ParseConfig(b []byte) (*Config, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	var raw any
	if err := json.Unmarshal(j, &raw); err != nil {
		return nil, fmt.Errorf("parse YAML: %w", err)
	}
	if raw == nil {
		return nil, errors.New("empty config")
	}
	if err := checkFields(raw, reflect.TypeOf(Config{}), ""); err != nil {
		return nil, err
	}
	// The version decides how the rest reads: check it before anything else.
	if m, ok := raw.(map[string]any); ok {
		v, _ := m["version"].(string)
		if v != ConfigVersion {
			return nil, fieldErr("version", "unsupported version %q (this plugin reads %q)", fmt.Sprint(m["version"]), ConfigVersion)
		}
	}
	var c Config
	dec := json.NewDecoder(strings.NewReader(string(j)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fieldErr(jsonPath(te.Field), "want %s, got %s", te.Type, te.Value)
		}
		return nil, fmt.Errorf("decode config: %w", err)
	}
	c.defaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) defaults() {
	if c.RescanInterval.Duration == 0 {
		c.RescanInterval.Duration = DefaultRescanInterval
	}
	for i := range c.Pools {
		if c.Pools[i].Sharing.Mode == "" {
			c.Pools[i].Sharing.Mode = SharingExclusive
		}
	}
}

var poolName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// Validate checks the config; errors are *FieldError with the field's path.
func (c *Config) Validate() error {
	if c.Version != ConfigVersion {
		return fieldErr("version", "unsupported version %q (this plugin reads %q)", c.Version, ConfigVersion)
	}
	if d := c.RescanInterval.Duration; d < 100*time.Millisecond || d > time.Minute {
		return fieldErr("rescanInterval", "%s is outside 100ms..1m", d)
	}
	if len(c.Pools) == 0 {
		return fieldErr("pools", "no pools")
	}
	seen := map[string]int{}
	for i, p := range c.Pools {
		at := fmt.Sprintf("pools[%d]", i)
		if !poolName.MatchString(p.Name) || len(p.Name) > 63 {
			return fieldErr(at+".name", "%q is not a valid resource name (lower-case letters, digits, '-', '.'; at most 63)", p.Name)
		}
		if j, dup := seen[p.Name]; dup {
			return fieldErr(at+".name", "pool %q is already defined by pools[%d]", p.Name, j)
		}
		seen[p.Name] = i
		if err := p.Selector.validate(at + ".selector"); err != nil {
			return err
		}
		switch p.Sharing.Mode {
		case SharingExclusive, "":
			if p.Sharing.MaxPodsPerDevice != 0 {
				return fieldErr(at+".sharing.maxPodsPerDevice", "only for mode %q", SharingShared)
			}
		case SharingShared:
			if n := p.Sharing.MaxPodsPerDevice; n < 1 || n > 1000 {
				return fieldErr(at+".sharing.maxPodsPerDevice", "%d is outside 1..1000", n)
			}
		default:
			return fieldErr(at+".sharing.mode", "unknown mode %q (want %s or %s)", p.Sharing.Mode, SharingExclusive, SharingShared)
		}
		if err := p.GIDPolicy.Policy().Validate(); err != nil {
			f := ".mode"
			if p.GIDPolicy.Mode == rdma.GIDPolicyIndex {
				f = ".index"
			}
			return fieldErr(at+".gidPolicy"+f, "%v", err)
		}
		if p.GIDPolicy.Mode != rdma.GIDPolicyIndex && p.GIDPolicy.Index != 0 {
			return fieldErr(at+".gidPolicy.index", "only for mode %q", rdma.GIDPolicyIndex)
		}
	}
	return nil
}

var vendorID = regexp.MustCompile(`^0x[0-9a-f]{4}$`)

func (s Selector) validate(at string) error {
	lists := []struct {
		name string
		vals []string
		ok   func(string) bool
		want string
	}{
		{"devices", s.Devices, func(v string) bool { return v != "" && !strings.ContainsAny(v, "/ ") }, "a device name"},
		{"drivers", s.Drivers, func(v string) bool { return v != "" && !strings.ContainsAny(v, "/ ") }, "a driver name"},
		{"vendors", s.Vendors, vendorID.MatchString, `a PCI vendor ID such as "0x15b3"`},
		{"linkLayers", s.LinkLayers, func(v string) bool {
			return v == rdma.LinkLayerEthernet || v == rdma.LinkLayerInfiniBand || v == rdma.LinkLayerUnspecified
		}, "Ethernet, InfiniBand or Unspecified (EFA)"},
		{"netdevs", s.Netdevs, func(v string) bool { return v != "" && !strings.ContainsAny(v, "/ ") }, "a netdev name"},
	}
	for _, l := range lists {
		for i, v := range l.vals {
			if !l.ok(v) {
				return fieldErr(fmt.Sprintf("%s.%s[%d]", at, l.name, i), "%q is not %s", v, l.want)
			}
		}
	}
	return nil
}

// Matches reports whether the selector selects the device.
func (s Selector) Matches(d rdma.Device) bool {
	if len(s.Devices) > 0 && !containsStr(s.Devices, d.Name) {
		return false
	}
	if len(s.Drivers) > 0 && !containsStr(s.Drivers, d.Driver) {
		return false
	}
	if len(s.Vendors) > 0 && !containsStr(s.Vendors, strings.ToLower(d.Vendor)) {
		return false
	}
	if len(s.LinkLayers) > 0 {
		ok := false
		for _, p := range d.Ports {
			ok = ok || containsStr(s.LinkLayers, p.LinkLayer)
		}
		if !ok {
			return false
		}
	}
	if len(s.Netdevs) > 0 {
		ok := false
		for _, p := range d.Ports {
			for _, n := range p.Netdevs {
				ok = ok || containsStr(s.Netdevs, n)
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// Assign maps each device to the pools whose selectors match it. A device matched
// by an exclusive pool and by any other pool is an error at the later pool's
// selector path: an exclusive pool's pod must be the device's only user.
func (c *Config) Assign(devs []rdma.Device) (map[string][]rdma.Device, error) {
	out := map[string][]rdma.Device{}
	for _, p := range c.Pools {
		out[p.Name] = nil
	}
	for _, d := range devs {
		first := -1
		for i, p := range c.Pools {
			if !p.Selector.Matches(d) {
				continue
			}
			if first >= 0 && (c.Pools[first].Sharing.Mode == SharingExclusive || p.Sharing.Mode == SharingExclusive) {
				return nil, fieldErr(fmt.Sprintf("pools[%d].selector", i),
					"device %s is also selected by pools[%d] (%q) and one of them is exclusive", d.Name, first, c.Pools[first].Name)
			}
			if first < 0 {
				first = i
			}
			out[p.Name] = append(out[p.Name], d)
		}
	}
	return out, nil
}

// checkFields walks the decoded document against the Go type and reports the first
// field the type does not have, with its path.
func checkFields(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch x := v.(type) {
	case map[string]any:
		return checkMapping(x, t, path)
	case []any:
		if t.Kind() != reflect.Slice {
			return fieldErr(path, "want %s, got a list", kindName(t))
		}
		for i, e := range x {
			if err := checkFields(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case string:
		if t.Kind() != reflect.String && t != reflect.TypeOf(Duration{}) {
			return fieldErr(path, "want %s, got string %q", kindName(t), trunc(x))
		}
	case float64:
		return checkNumber(x, t, path)
	case bool:
		if t.Kind() != reflect.Bool {
			return fieldErr(path, "want %s, got %v", kindName(t), x)
		}
	}
	return nil
}

// checkMapping checks a decoded mapping against struct type t, keys in sorted order.
func checkMapping(x map[string]any, t reflect.Type, path string) error {
	if t.Kind() != reflect.Struct {
		return fieldErr(path, "want %s, got a mapping", kindName(t))
	}
	if t == reflect.TypeOf(Duration{}) {
		return nil
	}
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := k
		if path != "" {
			p = path + "." + k
		}
		ft, ok := fields[k]
		if !ok {
			return fieldErr(p, "unknown field")
		}
		if err := checkFields(x[k], ft, p); err != nil {
			return err
		}
	}
	return nil
}

// checkNumber checks a decoded number against type t: integers for integer fields.
func checkNumber(x float64, t reflect.Type, path string) error {
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Int64:
		if x != float64(int64(x)) {
			return fieldErr(path, "want an integer, got %v", x)
		}
		return nil
	default:
		return fieldErr(path, "want %s, got number %v", kindName(t), x)
	}
}

func kindName(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(Duration{}):
		return "a duration"
	case t.Kind() == reflect.Struct:
		return "a mapping"
	case t.Kind() == reflect.Slice:
		return "a list"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	}
	return "an integer"
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// jsonPath turns encoding/json's "pools.0.sharing.mode" into "pools[0].sharing.mode".
func jsonPath(f string) string {
	parts := strings.Split(f, ".")
	var b strings.Builder
	for i, p := range parts {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
