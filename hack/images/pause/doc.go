// Command pause is the pod sandbox's process for ringcap's local test cluster, which cannot pull
// registry.k8s.io/pause: it sleeps as PID 1 of the sandbox, reaps orphaned children and exits
// on SIGINT or SIGTERM. hack/images/build.sh packages it as registry.k8s.io/pause:3.10.1.
package main
