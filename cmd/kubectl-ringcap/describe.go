package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ringcapv1 "github.com/ringcap/ringcap/api/v1alpha1"
)

func newDescribeCmd(cf *clusterFlags, now func() time.Time) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "One capture in detail: conditions, endpoint, ring and reader slots, observation, last run",
		Long: "describe shows a RingCapture's phase and conditions, node and pod, the endpoint a sender connects to " +
			"(address, port, device, GID index and GID), the ring's memory registration, rate, bytes received and " +
			"time held back, the ring's fill with each reader slot (connected, state, lag, last advance), the empty " +
			"reader slots, the current observation and the last run. With -A it finds NAME in any namespace.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := cf.connect()
			if err != nil {
				return err
			}
			rc, err := find(cmd.Context(), s, args[0], cf.allNamespaces)
			if err != nil {
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), describeText(rc, now()))
			return err
		},
	}
}

// find gets the capture name in the session's namespace or, with all, the one of that
// name in any namespace (an error when several namespaces have one).
func find(ctx context.Context, s *session, name string, all bool) (*ringcapv1.RingCapture, error) {
	if !all {
		var rc ringcapv1.RingCapture
		if err := s.client.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: name}, &rc); err != nil {
			return nil, fmt.Errorf("get RingCapture %s/%s: %w", s.namespace, name, err)
		}
		return &rc, nil
	}
	var list ringcapv1.RingCaptureList
	if err := s.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("list RingCaptures in every namespace: %w", err)
	}
	var found []*ringcapv1.RingCapture
	var where []string
	for i := range list.Items {
		if list.Items[i].Name == name {
			found = append(found, &list.Items[i])
			where = append(where, list.Items[i].Namespace)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no RingCapture %s in any namespace", name)
	case 1:
		return found[0], nil
	default:
		slices.Sort(where)
		return nil, fmt.Errorf("RingCapture %s is in namespaces %s: choose one with -n", name, strings.Join(where, ", "))
	}
}
