package fairshare

import "time"

func testTime(sec int64) time.Time { return time.Unix(1_800_000_000+sec, 0) }
