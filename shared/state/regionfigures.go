package state

import (
	"context"
	"errors"
)

// PrefixRegionFigures + region: a region's on-demand prices and the zones
// each instance type is offered in, as the functions last read them from
// the Pricing API and EC2 (package pricing encodes them). Beside the
// offerings EC2 refused (PrefixUnavailable), it is the other cached fact
// about offerings; unlike them it does not expire: old figures are the
// last known ones.
const PrefixRegionFigures = "regionfigures#"

// RegionFigures returns the region's figures as PutRegionFigures stored
// them, or nil and no error when none are stored.
func (s *Store) RegionFigures(ctx context.Context, region string) ([]byte, error) {
	data, _, err := s.GetBlob(ctx, Key(PrefixRegionFigures, region))
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	return data, err
}

// PutRegionFigures stores the region's figures (last writer wins; one
// item, so a reader sees the old figures or the new, never a mix).
func (s *Store) PutRegionFigures(ctx context.Context, region string, data []byte) error {
	return s.PutBlob(ctx, Key(PrefixRegionFigures, region), data)
}
