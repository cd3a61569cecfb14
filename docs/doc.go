// Package docs holds patrold's user and architecture documentation and
// the guard tests that keep it true to the code. Each guard derives the
// truth from the Go source (constants, enumerations, declared codes). It
// checks the documents against it, in both directions where the set is
// enumerable.
package docs
