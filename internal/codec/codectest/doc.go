// Package codectest holds codec to encoding/json for tests: Filled builds
// a value of any type with every reachable field set, and MatchesJSON
// checks codec writes and reads it as encoding/json does. Packages that
// store or send a type through codec test it here.
//
// It imports internal/codec and go-cmp; only tests import it.
package codectest
