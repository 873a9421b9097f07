package hugepages

import (
	"log/slog"
	"os"
)

// EnvVar turns the Advisor on in `drover agent` and `drover sim` when set
// to 1; it is off by default (see the package comment for why).
const EnvVar = "DROVER_HEAP_HUGEPAGES"

// StartFromEnv is Start when $DROVER_HEAP_HUGEPAGES is 1, and nil (a
// no-op Advisor) otherwise.
func StartFromEnv(logger *slog.Logger) *Advisor {
	if os.Getenv(EnvVar) != "1" {
		logger.Debug("heap huge pages off", "reason", EnvVar+" is not 1")
		return nil
	}
	return Start(logger)
}
