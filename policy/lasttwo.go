package policy

// lastTwo keeps the values of the two keys stored last: the listing cases
// and their classes of the registry served and of the one before it (while
// the schema is swapped, requests in flight finish on the old registry).
// The zero value is empty and ready.
type lastTwo[V any] struct {
	keys [2]string // keys[1] was stored last
	vals [2]V
	n    int
}

// get returns the value stored under k.
func (l *lastTwo[V]) get(k string) (V, bool) {
	for i := range l.n {
		if l.keys[i] == k {
			return l.vals[i], true
		}
	}
	var zero V
	return zero, false
}

// put stores v under k and returns the key it dropped to make room, if any:
// the one stored before the last two.
func (l *lastTwo[V]) put(k string, v V) (dropped string, ok bool) {
	for i := range l.n {
		if l.keys[i] == k {
			// k is stored last now.
			l.keys[i], l.vals[i] = l.keys[l.n-1], l.vals[l.n-1]
			l.keys[l.n-1], l.vals[l.n-1] = k, v
			return "", false
		}
	}
	if l.n < 2 {
		l.keys[l.n], l.vals[l.n] = k, v
		l.n++
		return "", false
	}
	dropped = l.keys[0]
	l.keys[0], l.vals[0] = l.keys[1], l.vals[1]
	l.keys[1], l.vals[1] = k, v
	return dropped, true
}

// reset empties it.
func (l *lastTwo[V]) reset() { *l = lastTwo[V]{} }
