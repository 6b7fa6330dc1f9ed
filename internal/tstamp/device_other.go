//go:build !linux

package tstamp

import (
	"errors"
	"fmt"
	"syscall"
)

// The kernel's timestamping (sockets, SIOC[GS]HWTSTAMP, PHCs) is Linux's.
// Elsewhere the types, the rule (Decide) and the proofs build, for a
// scenario's validation and plan; the host answers nothing.

var errLinux = fmt.Errorf("tstamp: Linux only: %w", errors.ErrUnsupported)

// HostDevice answers errors.ErrUnsupported off Linux.
func HostDevice() Device { return noDevice{} }

type noDevice struct{}

func (noDevice) TSInfo(string) (Caps, error)                { return Caps{}, errLinux }
func (noDevice) GetHWTstamp(string) (HWTstampConfig, error) { return HWTstampConfig{}, errLinux }
func (noDevice) SetHWTstamp(string, *HWTstampConfig) error  { return errLinux }
func errnoName(syscall.Errno) string                        { return "" }
