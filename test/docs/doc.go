// Package docs holds the tests that keep README.md and docs/ true to the
// code: every relative link and anchor resolves; the reference pages name
// exactly the metrics, event reasons, environment variables, CDK context
// values and CLI flags the code has (lists extracted from the Go source,
// never kept by hand); the README's map of the tree names each top-level
// folder and each folder under shared/; and the getting-started commands that
// run offline run.
//
// It exists so that the documentation fails a test, rather than a reader,
// when the code moves. It has no product code; everything is in its tests.
package docs
