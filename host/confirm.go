package host

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proxmox-mcp/proxmox-mcp/policy"
)

// ConfirmTTL is how long a confirmation token of the helper stays valid.
const ConfirmTTL = 5 * time.Minute

// confirmations are the helper's own: when a policy asks the caller to
// confirm a host operation, the helper answers with a token bound to the
// key, the operation as it canonicalized it and its arguments, and runs
// the operation when the same call comes back with it, once. The token is
// an HMAC under a key the helper makes when it starts and never writes
// down: a daemon cannot make one, and a restart of the helper voids every
// token (the caller asks again). The helper does not exit for idleness
// while a token it gave is still valid.
type confirmations struct {
	key [32]byte
	now func() time.Time

	mu     sync.Mutex
	used   map[string]time.Time // token -> expiry
	latest time.Time            // the last expiry of an issued token
}

func newConfirmations(now func() time.Time) (*confirmations, error) {
	c := &confirmations{now: now, used: map[string]time.Time{}}
	if _, err := rand.Read(c.key[:]); err != nil {
		return nil, fmt.Errorf("host: a confirmation key: %w", err)
	}
	return c, nil
}

// opDigest binds a token to the caller's key and the exact operation: the
// canonical target (path, unit and action, command and guest) and the
// arguments as journaled (a write's content by its hash).
func opDigest(keyID, op string, target policy.HostOp, args any) (string, error) {
	b, err := json.Marshal(struct {
		Key, Op string
		Target  policy.HostOp
		Args    any
	}{keyID, op, target, args})
	if err != nil {
		return "", fmt.Errorf("host: digest of the operation: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func (c *confirmations) mac(digest string, expiry int64) string {
	m := hmac.New(sha256.New, c.key[:])
	fmt.Fprintf(m, "%s.%d", digest, expiry)
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// issue is a token for the operation of digest, and when it expires.
func (c *confirmations) issue(digest string) (string, time.Time) {
	expiry := c.now().Add(ConfirmTTL).Truncate(time.Second)
	c.mu.Lock()
	if expiry.After(c.latest) {
		c.latest = expiry
	}
	c.mu.Unlock()
	return fmt.Sprintf("pmhc_%d_%s", expiry.Unix(), c.mac(digest, expiry.Unix())), expiry
}

var errBadConfirm = errors.New("the confirmation token does not confirm this call")

// redeem checks a token against the operation of digest and uses it up.
func (c *confirmations) redeem(token, digest string) error {
	rest, ok := strings.CutPrefix(token, "pmhc_")
	expText, mac, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 {
		return fmt.Errorf("%w: it is not a token of the helper's", errBadConfirm)
	}
	exp, err := strconv.ParseInt(expText, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: it is not a token of the helper's", errBadConfirm)
	}
	if !hmac.Equal([]byte(mac), []byte(c.mac(digest, exp))) {
		return fmt.Errorf("%w: it was issued for another key or operation, or before the helper last started (call again without it for a new one)", errBadConfirm)
	}
	now := c.now()
	if now.Unix() > exp {
		return fmt.Errorf("%w: it expired at %s", errBadConfirm, time.Unix(exp, 0).UTC().Format(time.RFC3339))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, e := range c.used {
		if now.After(e) {
			delete(c.used, t)
		}
	}
	if _, seen := c.used[token]; seen {
		return fmt.Errorf("%w: it was used already", errBadConfirm)
	}
	c.used[token] = time.Unix(exp, 0)
	return nil
}

// waiting says whether a token issued is still valid.
func (c *confirmations) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now().Before(c.latest)
}
