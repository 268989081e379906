package localkube

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// addressPool hands out loopback addresses, one per pod. Each address is also
// held under an advisory lock file shared by every runtime on the machine, so
// a test run and a `valkey-local up` started side by side never give two pods
// the same address. The kernel drops the lock when its holder dies, so a
// crashed run leaves nothing to clean up.
type addressPool struct {
	prefix  netip.Prefix
	lockDir string

	mu     sync.Mutex
	next   netip.Addr
	inUse  map[netip.Addr]*os.File
	closed bool
}

func newAddressPool(prefix netip.Prefix, lockDir string) (*addressPool, error) {
	prefix = prefix.Masked()
	if !prefix.Addr().Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(prefix.Addr()) || prefix.Bits() < 8 || prefix.Bits() > 24 {
		return nil, fmt.Errorf("pod address range %s must be an IPv4 loopback range between /8 and /24", prefix)
	}
	if err := os.MkdirAll(lockDir, 0o777); err != nil {
		return nil, fmt.Errorf("creating address lock dir: %w", err)
	}
	return &addressPool{prefix: prefix, lockDir: lockDir, next: prefix.Addr().Next(), inUse: map[netip.Addr]*os.File{}}, nil
}

// usable leaves out the network's .0 and .255 addresses and 127.0.0.1, which
// belongs to the host.
func (p *addressPool) usable(a netip.Addr) bool {
	b := a.As4()
	return p.prefix.Contains(a) && b[3] != 0 && b[3] != 255 && a != netip.MustParseAddr("127.0.0.1")
}

// allocate returns the next free address after the last one handed out, so a
// just-released address (and whatever clients still remember it) is reused
// as late as possible.
func (p *addressPool) allocate() (netip.Addr, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return netip.Addr{}, errors.New("address pool closed")
	}
	size := 1 << (32 - p.prefix.Bits())
	a := p.next
	for range size {
		if !p.prefix.Contains(a) {
			a = p.prefix.Addr()
		}
		cand := a
		a = a.Next()
		if !p.usable(cand) || p.inUse[cand] != nil {
			continue
		}
		f, err := p.lock(cand)
		if err != nil {
			continue
		}
		p.inUse[cand] = f
		p.next = a
		return cand, nil
	}
	return netip.Addr{}, fmt.Errorf("no free pod address left in %s", p.prefix)
}

func (p *addressPool) lock(a netip.Addr) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(p.lockDir, a.String()), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (p *addressPool) release(a netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f := p.inUse[a]; f != nil {
		f.Close()
		delete(p.inUse, a)
	}
}

func (p *addressPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, f := range p.inUse {
		f.Close()
		delete(p.inUse, a)
	}
	p.closed = true
}
