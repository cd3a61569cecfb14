package prompt

import (
	"hash/maphash"
	"maps"
	"sync"
)

// PlainMemo remembers, from one round to the next, the texts SafeText
// returns as they are: plain ASCII with no doubled or edge space and no
// instruction-like span (the check that costs: every rule is looked for).
// A daemon's steady runs file the same summaries, titles and evidence
// run after run, so a round is a run and each text is checked once.
//   - Only a text SafeText found plain is remembered; any other text is
//     made safe as Safe makes it, every time.
//   - A text is remembered by two 64-bit hashes under seeds of this
//     process (hash/maphash), not kept: a text taken for a remembered one
//     needs both to collide, which outside text cannot aim at.
//   - What the last round saw is kept, older rounds are forgotten, so the
//     memo holds at most two rounds' texts.
//   - Each text is one entry stamped with the round it was last met in,
//     so a text met again costs one probe of the table, not three.
//
// The nil memo remembers nothing. A memo is safe for concurrent use.
type PlainMemo struct {
	seeds [2]maphash.Seed
	mu    sync.Mutex
	met   map[[2]uint64]uint64 // the round each text was last met in: this one or the last
	round uint64               // this round's number
	// The texts the last round met, and those this round met so far.
	last, this int
}

// NewPlainMemo returns an empty memo.
func NewPlainMemo() *PlainMemo {
	return &PlainMemo{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, met: map[[2]uint64]uint64{}}
}

// Remembered is Safe(s, maxRunes): a text within the cap that this round
// or the last found plain is not checked again.
func (m *PlainMemo) Remembered(s string, maxRunes int) Text {
	return Text{m.SafeText(s, maxRunes)}
}

// SafeText is SafeText(s, maxRunes), remembered as Remembered is.
func (m *PlainMemo) SafeText(s string, maxRunes int) string {
	if m == nil || maxRunes <= 0 || len(s) > maxRunes {
		return SafeText(s, maxRunes)
	}
	k := [2]uint64{maphash.String(m.seeds[0], s), maphash.String(m.seeds[1], s)}
	m.mu.Lock()
	r, seen := m.met[k]
	if seen && r != m.round { // met again: kept for the next round
		m.met[k] = m.round
		m.this++
	}
	m.mu.Unlock()
	if seen {
		return s
	}
	if !plainASCII(s) {
		return SafeText(s, maxRunes)
	}
	m.mu.Lock()
	if r, ok := m.met[k]; !ok || r != m.round { // not met meanwhile
		m.met[k] = m.round
		m.this++
	}
	m.mu.Unlock()
	return s
}

// Round ends a round: what it found plain is remembered for the next,
// what the round before found is forgotten.
func (m *PlainMemo) Round() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.met, func(_ [2]uint64, r uint64) bool { return r != m.round })
	m.round++
	m.last, m.this = m.this, 0
}

// Len is the number of texts the memo remembers: those the last round
// met and those this round met (a text met in both counts twice).
func (m *PlainMemo) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last + m.this
}
