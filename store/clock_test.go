package store_test

import "time"

// now is the tests' fixed clock.
var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
