package relay

import "time"

// BatchTrace is the timeline of one claimed batch, handed to Config.Trace
// when the batch is done (a benchmark's per-phase profile; nothing in the
// relay depends on it). Zero times are phases the batch did not reach.
type BatchTrace struct {
	// ClaimStart and Claimed bracket the claim statement.
	ClaimStart, Claimed time.Time
	Events              int
	// Matched: the tenants' webhooks are loaded and the deliveries made
	// (one statement).
	Matched    time.Time
	Deliveries int
	// FirstSend is when the first POST started, LastResult when the last
	// result arrived.
	FirstSend, LastResult time.Time
	// Records are the batch's recording statements, in order.
	Records []RecordTrace
	// Recorded is when every result was recorded (or the batch failed): from
	// then on a crash repeats none of its POSTs, and its events no longer
	// count against Config.InFlightEvents. Done is when its claim ended too
	// (relayed mark and commit).
	Recorded time.Time
	Done     time.Time
	Err      error
}

// RecordTrace is one recording statement (transaction) of a batch.
type RecordTrace struct {
	Start, End time.Time
	Rows       int // delivery rows written
	Relayed    int // events marked relayed
}
