// Package docscheck holds tests that keep the documentation honest: every Go package of the
// module is named in the README's package table and in docs/architecture.md's component
// table; every metric the code names has a row in docs/troubleshooting.md; user pages carry
// no test inventory and every page keeps its lines short; the sample sender pod fits the
// sample capture. It has no code of its own.
package docscheck
