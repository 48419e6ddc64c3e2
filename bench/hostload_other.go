//go:build !linux

package bench

import "errors"

// Start reports that a host load needs Linux: it pins a real-time thread
// with sched_setaffinity and sched_setattr.
func (h HostLoad) Start() (stop func(), err error) {
	if err := h.Check(); err != nil {
		return nil, err
	}
	return nil, errors.New("host load: needs Linux (sched_setaffinity, SCHED_FIFO)")
}
