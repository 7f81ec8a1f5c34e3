//go:build !linux

package main

// allowedCPUs knows no CPU affinity outside Linux: none to choose from.
func allowedCPUs() ([]int, error) { return nil, nil }
