package scheduling

import "errors"

// Solve plans the placement of in.Pods. (Being written: returns an error until
// the solver lands.)
func Solve(in Input) (*Result, error) {
	return nil, errors.New("scheduling: solver not written yet")
}
