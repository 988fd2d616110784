package schema

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultPath is where pve-docs installs the API schema on a PVE host.
const DefaultPath = "/usr/share/pve-docs/api-viewer/apidoc.js"

// DefaultDebounce is how long the watcher waits after the last change of
// apidoc.js that does not say the file is complete before reading it: a
// writer that rewrites the file itself makes many writes within
// milliseconds, and a read in between would see part of the file. A file
// renamed over apidoc.js (as a package manager installs it), or on Linux
// closed after writing, is complete and is read at once, without it.
const DefaultDebounce = 50 * time.Millisecond

// Origin says where the live registry came from.
type Origin string

// Origins of a registry.
const (
	OriginFile  Origin = "file"  // apidoc.js itself
	OriginCache Origin = "cache" // the last-known-good copy
)

// Status describes the live registry and the last attempt to load one. It
// is what proxmox_schema_status, /readyz and STATUS= report.
type Status struct {
	// Source is the path of apidoc.js.
	Source string `json:"source"`
	// Origin is "file" or "cache".
	Origin Origin `json:"origin"`
	// SHA256 and Size identify the bytes the registry was built from.
	SHA256 string `json:"sha256"`
	Size   int    `json:"size"`
	// Paths and Methods count the registry's tree nodes and endpoints.
	Paths   int `json:"paths"`
	Methods int `json:"methods"`
	// LoadedAt is when the live registry was built.
	LoadedAt time.Time `json:"loaded_at"`
	// CheckedAt is when apidoc.js was last read.
	CheckedAt time.Time `json:"checked_at"`
	// Reloads counts registry swaps after the first load.
	Reloads int `json:"reloads"`
	// LastError is why the last read of apidoc.js did not give the live
	// registry (missing, truncated, malformed); empty when it did.
	LastError string `json:"last_error,omitempty"`
	// LastErrorAt is when LastError happened.
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	// CachePath is the last-known-good copy; CacheError why it could not be
	// written, if it could not.
	CachePath  string `json:"cache_path,omitempty"`
	CacheError string `json:"cache_error,omitempty"`
}

// Healthy reports whether the live registry is the current apidoc.js.
func (s Status) Healthy() bool { return s.LastError == "" && s.Origin == OriginFile }

// EventKind classifies what a check of apidoc.js found.
type EventKind string

// Events a Source reports to its observer.
const (
	EventLoaded    EventKind = "loaded"    // first registry built
	EventReloaded  EventKind = "reloaded"  // a new registry replaced the old
	EventUnchanged EventKind = "unchanged" // same bytes as the live registry
	EventRejected  EventKind = "rejected"  // unreadable or invalid; old registry kept
)

// Event is one outcome of reading apidoc.js.
type Event struct {
	Kind     EventKind
	Registry *Registry // the live registry after the event
	Err      error     // for EventRejected
}

// SourceOptions configures a Source.
type SourceOptions struct {
	// Path is apidoc.js; DefaultPath when empty.
	Path string
	// Cache keeps the last-known-good copy; nil disables it.
	Cache *Cache
	// Debounce delays reads after the events that do not say the file is
	// complete (see Watch); DefaultDebounce when zero.
	Debounce time.Duration
	// Logger receives one line per event; slog.Default() when nil.
	Logger *slog.Logger
	// Observe, when set, is called after every check, in the watcher's
	// goroutine (or the caller's, for Load and Reload).
	Observe func(Event)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Source owns the live registry: it loads apidoc.js (or its last-known-good
// copy) at start, and swaps in a new registry atomically whenever the file
// changes to a valid schema. Callers take Current() once per request and
// finish on that registry even if a newer one arrives meanwhile.
type Source struct {
	opts    SourceOptions
	current atomic.Pointer[Registry]

	mu     sync.Mutex // serializes checks and guards status
	status Status
	// shown is the copy of status that Status returns: published once the
	// registry is swapped (before the observer is told) and again when a
	// check ends, so a reader never waits for a parse or the cache write.
	shown atomic.Pointer[Status]
}

// NewSource prepares a Source; call Load before Current.
func NewSource(opts SourceOptions) *Source {
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Source{opts: opts}
	s.status.Source = opts.Path
	if opts.Cache != nil {
		s.status.CachePath = opts.Cache.Path()
	}
	s.publish()
	return s
}

// Current returns the live registry, or nil before a successful Load.
func (s *Source) Current() *Registry { return s.current.Load() }

// Status returns a copy of the current status. It does not wait for a
// check in progress: it says what the last published state was.
func (s *Source) Status() Status { return *s.shown.Load() }

// publish makes the status as it is now what Status returns; s.mu is held.
func (s *Source) publish() {
	st := s.status
	s.shown.Store(&st)
}

// Load builds the first registry from apidoc.js, falling back to the
// last-known-good cache when the file is missing or invalid. With neither,
// it fails and says why both could not be used.
func (s *Source) Load(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.publish()
	now := s.opts.Now()
	s.status.CheckedAt = now
	reg, data, fileErr := s.readFile()
	if fileErr == nil {
		s.install(reg, OriginFile, now)
		s.storeCache(data, reg.SHA256(), now)
		s.emit(Event{Kind: EventLoaded, Registry: reg})
		return nil
	}
	s.recordError(fileErr, now)
	if s.opts.Cache == nil {
		return fmt.Errorf("no usable API schema: %w (no last-known-good cache configured)", fileErr)
	}
	cached, meta, cacheErr := s.opts.Cache.LoadRegistry()
	if cacheErr != nil {
		return fmt.Errorf("no usable API schema: %w; and the last-known-good cache is unusable: %v", fileErr, cacheErr)
	}
	s.install(cached, OriginCache, now)
	s.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "schema: apidoc.js unusable, serving the last-known-good copy",
		slog.String("error", fileErr.Error()), slog.String("cache", s.opts.Cache.Path()),
		slog.String("cache_source", meta.Source), slog.Time("validated_at", meta.ValidatedAt))
	s.emit(Event{Kind: EventLoaded, Registry: cached, Err: fileErr})
	return nil
}

// Reload reads apidoc.js now (the watcher and SIGHUP call it). It swaps
// the registry only for a valid file whose bytes differ from the live
// registry's, and reports whether it did. The new registry is served and
// the observer told before the last-known-good cache is written (a write
// and two fsyncs of the whole file), which only the next check waits for.
func (s *Source) Reload(ctx context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.publish()
	now := s.opts.Now()
	s.status.CheckedAt = now
	data, err := ReadFile(s.opts.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%s is missing", s.opts.Path)
		}
		return false, s.reject(ctx, err, now)
	}
	reg, unchanged, err := s.parseChanged(data)
	if unchanged {
		s.clearError()
		s.emit(Event{Kind: EventUnchanged, Registry: s.current.Load()})
		return false, nil
	}
	if err != nil {
		return false, s.reject(ctx, fmt.Errorf("%s: %w", s.opts.Path, err), now)
	}
	s.install(reg, OriginFile, now)
	s.status.Reloads++
	// Served from here on: Current and Status say so, and the observer
	// is told, before the cache is written.
	s.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "schema: reloaded apidoc.js",
		slog.String("sha256", reg.SHA256()), slog.Int("paths", reg.Paths()), slog.Int("methods", reg.Methods()))
	s.emit(Event{Kind: EventReloaded, Registry: reg})
	s.storeCache(data, reg.SHA256(), now)
	return true, nil
}

// parseChanged parses data unless it is the live registry's file, and
// hashes it once either way. Bytes of another size than the live file's
// have changed: they are hashed on the other core while they are parsed.
// Bytes of the same size are hashed first, and parsed if that differs.
func (s *Source) parseChanged(data []byte) (reg *Registry, unchanged bool, err error) {
	live := s.current.Load()
	if live == nil || s.status.Origin != OriginFile || len(data) != live.Size() {
		reg, err = Parse(data)
		return reg, false, err
	}
	sum := sha256Hex(data)
	if sum == live.SHA256() {
		return nil, true, nil
	}
	reg, err = parseHashed(data, sum)
	return reg, false, err
}

func (s *Source) reject(ctx context.Context, err error, now time.Time) error {
	s.recordError(err, now)
	s.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "schema: keeping the previous registry", slog.String("error", err.Error()))
	s.emit(Event{Kind: EventRejected, Registry: s.current.Load(), Err: err})
	return err
}

func (s *Source) readFile() (*Registry, []byte, error) {
	data, err := ReadFile(s.opts.Path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s is missing", s.opts.Path)
		}
		return nil, nil, fmt.Errorf("read %s: %w", s.opts.Path, err)
	}
	reg, err := Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s.opts.Path, err)
	}
	return reg, data, nil
}

func (s *Source) install(reg *Registry, origin Origin, now time.Time) {
	s.current.Store(reg)
	s.status.Origin = origin
	s.status.SHA256 = reg.SHA256()
	s.status.Size = reg.Size()
	s.status.Paths = reg.Paths()
	s.status.Methods = reg.Methods()
	s.status.LoadedAt = now
	if origin == OriginFile {
		s.clearError()
	}
}

func (s *Source) recordError(err error, now time.Time) {
	s.status.LastError = err.Error()
	at := now
	s.status.LastErrorAt = &at
}

func (s *Source) clearError() {
	s.status.LastError = ""
	s.status.LastErrorAt = nil
}

// storeCache keeps the validated bytes (whose hex SHA-256 is sum) as
// last-known-good unless the cache already holds them intact. A cache
// whose header names other bytes is written over without reading the
// bytes it held; one that names these is checked whole, and rewritten if
// damaged.
func (s *Source) storeCache(data []byte, sum string, now time.Time) {
	if s.opts.Cache == nil {
		return
	}
	if s.cacheHolds(sum) {
		s.status.CacheError = ""
		return
	}
	err := s.opts.Cache.store(CacheMeta{Source: s.opts.Path, ValidatedAt: now.UTC()}, data, sum)
	if err != nil {
		s.status.CacheError = err.Error()
		s.opts.Logger.Warn("schema: cannot write the last-known-good cache", "error", err)
		return
	}
	s.status.CacheError = ""
}

// cacheHolds reports whether the cache holds, intact, the bytes whose
// hex SHA-256 is sum.
func (s *Source) cacheHolds(sum string) bool {
	if meta, err := s.opts.Cache.loadHeader(); err != nil || meta.SHA256 != sum {
		return false
	}
	meta, _, err := s.opts.Cache.Load()
	return err == nil && meta.SHA256 == sum
}

// emit publishes the status, then tells the observer, which sees the
// status of the event it is told of.
func (s *Source) emit(ev Event) {
	s.publish()
	if s.opts.Observe != nil {
		s.opts.Observe(ev)
	}
}

// Watch follows apidoc.js until ctx ends. It watches the parent directory,
// not the file, because package managers replace the file by renaming a
// new one over it. A file that is complete is read at once: one renamed
// onto the path, or (on Linux, where inotify says so) one closed after
// writing. Any other event naming the file (a write to a file still open,
// a create, a chmod, a removal) restarts a debounce timer, after which
// Reload re-reads and re-hashes it; so do lost events (a queue overflow).
// A file that does not parse never replaces the live registry and is read
// again on the next event. If the directory itself disappears, Watch
// waits for it to come back.
func (s *Source) Watch(ctx context.Context) error {
	dir := filepath.Dir(s.opts.Path)
	w, err := newDirWatcher()
	if err != nil {
		return fmt.Errorf("schema watch: %w", err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("schema watch %s: %w", dir, err)
	}
	// A change between Load and Add would be missed: check once now.
	s.Reload(ctx) //nolint:errcheck // reported through status and Observe
	return s.follow(ctx, w, dir)
}

// follow runs Watch's loop on w, which watches dir.
func (s *Source) follow(ctx context.Context, w dirWatcher, dir string) error {
	l := &watchLoop{dir: dir, base: filepath.Base(s.opts.Path), timer: time.NewTimer(time.Hour)}
	l.timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events():
			if !ok {
				return errors.New("schema watch: watcher closed")
			}
			s.onEvent(ctx, l, ev)
		case err, ok := <-w.Errors():
			if !ok {
				return errors.New("schema watch: watcher closed")
			}
			// Overflow and the like: re-read to be sure.
			s.opts.Logger.Warn("schema: watcher error", "error", err)
			l.afterRename = false
			l.timer.Reset(s.opts.Debounce)
		case <-l.timer.C:
			s.Reload(ctx) //nolint:errcheck // reported through status and Observe
		case <-l.retry:
			l.retry = nil
			if err := w.Add(dir); err != nil {
				l.retry = time.After(time.Second)
				continue
			}
			s.Reload(ctx) //nolint:errcheck // reported through status and Observe
		}
	}
}

// watchLoop is the state of Watch's loop.
type watchLoop struct {
	dir, base   string
	timer       *time.Timer      // the debounce
	retry       <-chan time.Time // when to watch the directory again; nil while watched
	afterRename bool             // the last event was a sibling's Rename (fsnotify)
}

// onEvent acts on one event of the watcher.
func (s *Source) onEvent(ctx context.Context, l *watchLoop, ev watchEvent) {
	act := eventAction(ev, l.dir, l.base, l.afterRename)
	l.afterRename = act == watchSiblingRenamed
	switch act {
	case watchReadNow:
		l.timer.Stop()
		s.Reload(ctx) //nolint:errcheck // reported through status and Observe
	case watchDebounce:
		l.timer.Reset(s.opts.Debounce)
	case watchReread:
		s.opts.Logger.Warn("schema: the watcher lost events; re-reading apidoc.js")
		l.timer.Reset(s.opts.Debounce)
	case watchRewatch:
		l.retry = time.After(time.Second)
	}
}
