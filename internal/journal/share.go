package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Share is one process's hold on a change several processes rely on: the
// hand-run probes of a run on one NIC, whose timestamping the first of them
// switched on in its own lane. Each holds the share while it relies on the
// change; the last to leave gets every lane written under the share, to
// undo newest first, and the others leave their lanes to it. A holder that
// dies (kill -9) drops its hold; its lane stays pending for `rig restore`.
//
// In base/shares: KEY.lock is held shared by every holder, KEY.lanes lists
// the lanes written, in order; the host lock's guard orders joining and
// leaving.
type Share struct {
	base, path string
	lock       *os.File
}

// JoinShare joins the share key in base (a journal base directory). With
// ifWritten it joins only a share under which a live holder wrote a lane
// (a change is in force for someone), and returns nil otherwise.
func JoinShare(base, key string, ifWritten bool) (*Share, error) {
	if err := os.MkdirAll(filepath.Join(base, "shares"), 0o700); err != nil {
		return nil, permissionHint(fmt.Errorf("journal shares: %w", err))
	}
	unguard, err := guard(base)
	if err != nil {
		return nil, err
	}
	defer unguard()
	s := &Share{base: base, path: filepath.Join(base, "shares", key)}
	if s.lock, err = os.OpenFile(s.path+".lock", os.O_RDWR|os.O_CREATE, 0o600); err != nil {
		return nil, err
	}
	// No holder left: what the record lists is a dead holder's, pending
	// for `rig restore`, not a change in force.
	if flockNB(s.lock, syscall.LOCK_EX) == nil {
		if err := os.Remove(s.path + ".lanes"); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.lock.Close()
			return nil, err
		}
		if ifWritten {
			s.lock.Close()
			return nil, nil
		}
	}
	if err := flockNB(s.lock, syscall.LOCK_SH); err != nil {
		s.lock.Close()
		return nil, fmt.Errorf("lock %s: %w", s.lock.Name(), err)
	}
	return s, nil
}

// ShareWritten reports whether a lane was recorded as written under the
// share key in base (a cheap look before JoinShare; its holders may have
// died since: JoinShare tells). A record that cannot be looked at is an
// error.
func ShareWritten(base, key string) (bool, error) {
	_, err := os.Stat(filepath.Join(base, "shares", key+".lanes"))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Wrote records lane as written under the share.
func (s *Share) Wrote(lane string) error {
	unguard, err := guard(s.base)
	if err != nil {
		return err
	}
	defer unguard()
	f, err := os.OpenFile(s.path+".lanes", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(lane + "\n")
	return errors.Join(err, f.Close())
}

// Leave leaves the share. The last holder (last) gets the lanes written
// under it, in the order written (those that still exist), and the record
// is removed; the others leave their lanes to it.
func (s *Share) Leave() (lanes []string, last bool, err error) {
	unguard, err := guard(s.base)
	if err != nil {
		return nil, false, err
	}
	defer unguard()
	defer s.lock.Close()
	if errors.Is(flockNB(s.lock, syscall.LOCK_EX), syscall.EWOULDBLOCK) {
		return nil, false, nil // another holder shares it
	}
	b, err := os.ReadFile(s.path + ".lanes")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, true, err
	}
	for _, l := range strings.Fields(string(b)) {
		if _, err := os.Stat(l); err == nil {
			lanes = append(lanes, l)
		}
	}
	if err := os.Remove(s.path + ".lanes"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return lanes, true, err
	}
	return lanes, true, nil
}
