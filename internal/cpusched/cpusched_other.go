//go:build !linux

package cpusched

import (
	"errors"
	"fmt"
	"time"

	"github.com/rig-project/rig/internal/samples"
)

// Placing a thread is Linux's (sched_setaffinity, sched_setattr,
// PR_SET_TIMERSLACK, RUSAGE_THREAD): elsewhere rig only reads and plans.

var errLinux = fmt.Errorf("cpusched: Linux only: %w", errors.ErrUnsupported)

func PinThread(int) error                       { return errLinux }
func PinThreadFor(int) (func() bool, error)     { return nil, errLinux }
func Apply(Sched) error                         { return errLinux }
func Tid() int                                  { return 0 }
func AvoidCPU(int) (func(), error)              { return func() {}, errLinux }
func SetTimerSlack(time.Duration) error         { return errLinux }
func threadUsage() (samples.ThreadUsage, error) { return samples.ThreadUsage{}, errLinux }
