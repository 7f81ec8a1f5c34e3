package dada

import (
	"fmt"
	"os"
)

// runChildRole runs one role of a multi-process test in a re-executed test binary.
func runChildRole(role string) int {
	fmt.Fprintf(os.Stderr, "%v: %s\n", errUnknownRole, role)
	return 2
}
