package main

import (
	"os"
	"path/filepath"
	"testing"
)

const testKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: first
  context: {cluster: c, user: u, namespace: radio}
- name: second
  context: {cluster: c, user: u}
current-context: first
`

// The namespace comes from -n, else the context's (the current one, or --context), else default.
func TestConnectNamespace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(testKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flags clusterFlags
		want  string
	}{
		{clusterFlags{kubeconfig: path}, "radio"},
		{clusterFlags{kubeconfig: path, namespace: "optical"}, "optical"},
		{clusterFlags{kubeconfig: path, context: "second"}, "default"},
	} {
		s, err := tc.flags.connect()
		if err != nil {
			t.Fatalf("%+v: %v", tc.flags, err)
		}
		if s.namespace != tc.want {
			t.Errorf("%+v: namespace %q, want %q", tc.flags, s.namespace, tc.want)
		}
	}
	if _, err := (&clusterFlags{kubeconfig: path, context: "missing"}).connect(); err == nil {
		t.Error("an unknown --context gave no error")
	}
}

func TestTopRefusesANonPositiveInterval(t *testing.T) {
	root := newRootCmd(os.Stdout, nil)
	root.SetArgs([]string{"top", "--interval", "0s"})
	if err := root.Execute(); err == nil {
		t.Error("top --interval 0s gave no error")
	}
}
