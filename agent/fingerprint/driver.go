package fingerprint

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/drover/drover/api"
	"github.com/drover/drover/drivers"
)

// FingerprintDrivers asks every driver for its health. Detected drivers
// add "driver.<name>" = "1" and their own attributes to attrs; the
// returned map is the node's Drivers.
func FingerprintDrivers(ctx context.Context, ds map[string]drivers.Driver, now time.Time) (map[string]*api.DriverInfo, map[string]string) {
	infos := make(map[string]*api.DriverInfo, len(ds))
	attrs := map[string]string{}
	// Drivers fingerprint in parallel (one may talk to a daemon); this
	// function waits for all of them.
	fps := make(map[string]*drivers.Fingerprint, len(ds))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fp := d.Fingerprint(ctx)
			mu.Lock()
			fps[name] = fp
			mu.Unlock()
		}()
	}
	wg.Wait()
	for name := range ds {
		fp := fps[name]
		if fp == nil {
			fp = &drivers.Fingerprint{Health: drivers.HealthUndetected}
		}
		info := &api.DriverInfo{
			Attributes:        maps.Clone(fp.Attributes),
			Detected:          fp.Health != drivers.HealthUndetected,
			Healthy:           fp.Health == drivers.HealthHealthy,
			HealthDescription: fp.HealthDescription,
			UpdateTime:        now,
		}
		infos[name] = info
		if info.Detected {
			maps.Copy(attrs, fp.Attributes)
			if info.Healthy {
				attrs["driver."+name] = "1"
			}
		}
	}
	return infos, attrs
}

// SameDrivers reports whether two driver maps differ only in UpdateTime.
func SameDrivers(a, b map[string]*api.DriverInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || x.Detected != y.Detected || x.Healthy != y.Healthy ||
			x.HealthDescription != y.HealthDescription || !maps.Equal(x.Attributes, y.Attributes) {
			return false
		}
	}
	return true
}
