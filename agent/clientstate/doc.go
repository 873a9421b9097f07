// Package clientstate persists a client's state in a bbolt file
// (<client data dir>/state.db, i.e. <agent data dir>/client/state.db; a
// file at the old <client data dir>/client/state.db is moved there on
// Open): the node identity, every allocation as
// received from the server, and per task the runner state (TaskState,
// restart tracking, the driver's TaskHandle). An agent restart reads it
// back to reattach to running tasks instead of restarting them.
//
// Imports: api and drivers (for TaskHandle) only.
//
// Concurrency: a DB is safe for concurrent use (bbolt serialises
// writers); values are JSON so the file stays debuggable.
package clientstate
