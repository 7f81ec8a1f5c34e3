// Package status keeps a receiver's live status document (statusdoc.Status)
// and its Prometheus metrics: the Tracker, which the engine tells what
// happens (bytes landed per queue pair, blocks filled, holds, observations,
// failed completions, refused senders) and which serves /status, /metrics and
// the summary file.
package status
