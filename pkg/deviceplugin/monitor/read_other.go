//go:build !linux

package monitor

import (
	"fmt"
	"os"
)

// ReadRegion reads a region file and decodes it. HAMi-core only runs on
// Linux; this plain read exists so the package builds and its tests run
// elsewhere.
func ReadRegion(path string) (*Region, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read shared region: %w", err)
	}
	if err := checkRegionFile(path, info); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read shared region: %w", err)
	}
	return ParseRegion(path, data)
}
