// Package docscheck holds tests that keep the documentation honest: every Go package of the
// module is named in the README's package table and in docs/architecture.md's component
// table. It has no code of its own.
package docscheck
