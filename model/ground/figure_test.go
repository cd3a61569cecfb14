package ground_test

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"pgregory.net/rapid"

	"github.com/patrold/patrold/model/ground"
)

// Units as the grammar gives them, for the table below.
var (
	pct   = []float64{1}
	gb    = []float64{1e9, 1 << 30}
	gib   = []float64{1 << 30}
	fahr  = []float64{5.0 / 9}
	hours = []float64{3600}
)

func fig(text string, v float64, dec int, u ground.Unit, scales []float64) ground.Figure {
	return ground.Figure{Text: text, Value: v, Decimals: dec, Unit: u, Scales: scales}
}

// TestReadFigures: every notation of the one figure grammar reads as a
// whole value: the number, its precision and its unit.
func TestReadFigures(t *testing.T) {
	unreadable := func(text string) ground.Figure { return ground.Figure{Text: text, Unreadable: true} }
	f := fig("120", 120, 0, ground.UnitFahrenheit, fahr)
	f.Offset = -160.0 / 9
	k := fig("49", 49, 0, ground.UnitKelvin, pct)
	k.Offset = -273.15
	minus := fig("-5", -5, 0, ground.UnitCelsius, pct)
	cases := []struct {
		text string
		want []ground.Figure
	}{
		// Digits: exponent, grouping, decimal comma, precision, sign, scale words.
		{"9.97e1%", []ground.Figure{fig("9.97e1", 99.7, 1, ground.UnitPercent, pct)}},
		{"1E3 GiB", []ground.Figure{fig("1E3", 1000, 0, ground.UnitBytes, gib)}},
		{"414e-1 %", []ground.Figure{fig("414e-1", 41.4, 1, ground.UnitPercent, pct)}},
		{"41.40%", []ground.Figure{fig("41.40", 41.4, 2, ground.UnitPercent, pct)}},
		{"41,4 %", []ground.Figure{fig("41,4", 41.4, 1, ground.UnitPercent, pct)}},
		{"1,024 GB", []ground.Figure{fig("1,024", 1024, 0, ground.UnitBytes, gb)}},
		{"1.5 million", []ground.Figure{fig("1.5 million", 1.5e6, 0, "", nil)}},
		{"-5 °C", []ground.Figure{minus}},
		// Percent spellings.
		{"99pc", []ground.Figure{fig("99", 99, 0, ground.UnitPercent, pct)}},
		{"99 pct", []ground.Figure{fig("99", 99, 0, ground.UnitPercent, pct)}},
		{"99 per cent", []ground.Figure{fig("99", 99, 0, ground.UnitPercent, pct)}},
		{"99 Prozent", []ground.Figure{fig("99", 99, 0, ground.UnitPercent, pct)}},
		{"99 pour cent", []ground.Figure{fig("99", 99, 0, ground.UnitPercent, pct)}},
		{"99 por ciento", []ground.Figure{fig("99", 99, 0, ground.UnitPercent, pct)}},
		{"5‰", []ground.Figure{fig("5", 5, 0, ground.UnitPercent, []float64{0.1})}},
		// Multipliers and fractions.
		{"10x", []ground.Figure{fig("10", 10, 0, ground.UnitFactor, pct)}},
		{"10×", []ground.Figure{fig("10", 10, 0, ground.UnitFactor, pct)}},
		{"3 times the trigger", []ground.Figure{fig("3", 3, 0, ground.UnitFactor, pct)}},
		{"raised 3 times", []ground.Figure{fig("3", 3, 0, "", nil)}},
		{"twice the trigger", []ground.Figure{fig("twice", 2, 0, ground.UnitFactor, pct)}},
		{"double the trigger, a double fault", []ground.Figure{fig("double", 2, 0, ground.UnitFactor, pct)}},
		{"zweimal, dreifach, 3 fois, 3 veces", []ground.Figure{fig("zweimal", 2, 0, ground.UnitFactor, pct),
			fig("dreifach", 3, 0, ground.UnitFactor, pct), fig("3", 3, 0, ground.UnitFactor, pct), fig("3", 3, 0, ground.UnitFactor, pct)}},
		{"half", []ground.Figure{fig("half", 0.5, 1, ground.UnitRatio, pct)}},
		{"three quarters", []ground.Figure{fig("three quarters", 0.75, 2, ground.UnitRatio, pct)}},
		{"two and a half hours", []ground.Figure{fig("two and a half", 2.5, 1, ground.UnitSeconds, hours)}},
		// Number words in English, German, French and Spanish.
		{"a hundred percent", []ground.Figure{fig("a hundred", 100, 0, ground.UnitPercent, pct)}},
		{"one hundred and five per cent", []ground.Figure{fig("one hundred and five", 105, 0, ground.UnitPercent, pct)}},
		{"a dozen, two dozen", []ground.Figure{fig("a dozen", 12, 0, "", nil), fig("two dozen", 24, 0, "", nil)}},
		{"forty-one point four percent", []ground.Figure{fig("forty-one point four", 41.4, 1, ground.UnitPercent, pct)}},
		{"five five", []ground.Figure{fig("five", 5, 0, "", nil), fig("five", 5, 0, "", nil)}},
		{"neunundneunzig Prozent", []ground.Figure{fig("neunundneunzig", 99, 0, ground.UnitPercent, pct)}},
		{"einundvierzig Komma vier Prozent", []ground.Figure{fig("einundvierzig Komma vier", 41.4, 1, ground.UnitPercent, pct)}},
		{"zweihundertdreiundzwanzig", []ground.Figure{fig("zweihundertdreiundzwanzig", 223, 0, "", nil)}},
		{"quatre-vingt-dix-neuf pour cent", []ground.Figure{fig("quatre-vingt-dix-neuf", 99, 0, ground.UnitPercent, pct)}},
		{"soixante et onze, deux cents", []ground.Figure{fig("soixante et onze", 71, 0, "", nil), fig("deux cents", 200, 0, "", nil)}},
		{"noventa y nueve por ciento", []ground.Figure{fig("noventa y nueve", 99, 0, ground.UnitPercent, pct)}},
		{"dieciséis, doscientos cinco, dos mil", []ground.Figure{fig("dieciséis", 16, 0, "", nil),
			fig("doscientos cinco", 205, 0, "", nil), fig("dos mil", 2000, 0, "", nil)}},
		// Words that are figures only with a unit after them.
		{"one of them, once, sept, null, mil", nil},
		{"one percent, null Prozent", []ground.Figure{fig("one", 1, 0, ground.UnitPercent, pct), fig("null", 0, 0, ground.UnitPercent, pct)}},
		// Vague quantities have no value.
		{"hundreds of them", []ground.Figure{unreadable("hundreds")}},
		{"Hunderte, des centaines, cientos, millions, dozens", []ground.Figure{unreadable("Hunderte"), unreadable("centaines"),
			unreadable("cientos"), unreadable("millions"), unreadable("dozens")}},
		// Roman numerals; acronyms and single letters only before a unit.
		{"XCIX%", []ground.Figure{fig("XCIX", 99, 0, ground.UnitPercent, pct)}},
		{"XLI", []ground.Figure{fig("XLI", 41, 0, "", nil)}},
		{"\u216b", []ground.Figure{fig("\u216b", 12, 0, "", nil)}},
		{"CI, MIX, I/O, DC", nil},
		{"V %", []ground.Figure{fig("V", 5, 0, ground.UnitPercent, pct)}},
		// Other digit scripts.
		{"٤١.٤%", []ground.Figure{fig("٤١.٤", 41.4, 1, ground.UnitPercent, pct)}},
		{"४१ %", []ground.Figure{fig("४१", 41, 0, ground.UnitPercent, pct)}},
		// Temperatures.
		{"120°F", []ground.Figure{f}},
		{"120 ℉", []ground.Figure{{Text: "120", Value: 120, Unit: ground.UnitFahrenheit, Scales: fahr, Offset: -160.0 / 9}}},
		{"120 degrees F", []ground.Figure{f}},
		{"49 K", []ground.Figure{k}},
		{"49 °C, 49°, 49 C", []ground.Figure{fig("49", 49, 0, ground.UnitCelsius, pct), fig("49", 49, 0, ground.UnitCelsius, pct),
			fig("49", 49, 0, ground.UnitCelsius, pct)}},
		// Counts and durations.
		{"41 processes OOM-killed", []ground.Figure{fig("41", 41, 0, ground.UnitCount, nil)}},
		{"41 Prozesse", []ground.Figure{fig("41", 41, 0, ground.UnitCount, nil)}},
		{"41 ms", []ground.Figure{fig("41", 41, 0, ground.UnitSeconds, []float64{1e-3})}},
		{"41 on vm", []ground.Figure{fig("41", 41, 0, "", nil)}},
		// Names are not figures.
		{"pve1 sdb3 db-1 0x10 v1", nil},
		{"memory99.7%", []ground.Figure{fig("99.7", 99.7, 1, ground.UnitPercent, pct)}},
	}
	for _, c := range cases {
		if got := ground.ReadFigures(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.text, got, c.want)
		}
	}
}

// notation renders a figure one way; value and decimals are what it
// must read back as.
type notation struct {
	name string
	// render writes n/10^dec; ok is false when the notation cannot.
	render func(n int64, dec int) (string, bool)
}

// notations are the figure forms the grammar reads, rendered here
// independently of it.
var notations = []notation{
	{"digits", func(n int64, dec int) (string, bool) { return fixed(n, dec), true }},
	{"grouped", func(n int64, dec int) (string, bool) {
		s := fixed(n, dec)
		whole, frac, _ := strings.Cut(s, ".")
		for i := len(whole) - 3; i > 0; i -= 3 {
			whole = whole[:i] + "," + whole[i:]
		}
		if frac != "" {
			return whole + "." + frac, true
		}
		return whole, true
	}},
	{"exponent", func(n int64, dec int) (string, bool) {
		// n/10^dec as m.mmm e k with every digit of n kept.
		d := strconv.FormatInt(n, 10)
		if len(d) == 1 {
			return d + "e-" + strconv.Itoa(dec), dec > 0
		}
		exp := len(d) - 1 - dec
		return d[:1] + "." + d[1:] + "e" + strconv.Itoa(exp), true
	}},
	{"english", words(english)},
	{"german", words(german)},
	{"french", words(french)},
	{"spanish", words(spanish)},
	{"roman", func(n int64, dec int) (string, bool) {
		if dec > 0 || n < 1 || n > 3999 {
			return "", false
		}
		return roman(int(n)), true
	}},
	{"arabic-indic", script('٠')},
	{"devanagari", script('०')},
	{"thai", script('๐')},
	{"fullwidth", script('０')},
}

func fixed(n int64, dec int) string {
	return strconv.FormatFloat(float64(n)/math.Pow10(dec), 'f', dec, 64)
}

func script(zero rune) func(int64, int) (string, bool) {
	return func(n int64, dec int) (string, bool) {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return zero + r - '0'
			}
			return r
		}, fixed(n, dec)), true
	}
}

// words renders whole numbers below a million in a language; decimals
// are spelled digit by digit after the language's point word.
func words(lang func(int64) (string, string)) func(int64, int) (string, bool) {
	return func(n int64, dec int) (string, bool) {
		if n >= 1e6*int64(math.Pow10(dec)) {
			return "", false
		}
		p := int64(math.Pow10(dec))
		s, point := lang(n / p)
		if dec == 0 {
			return s, true
		}
		frac := fmt.Sprintf("%0*d", dec, n%p)
		for _, d := range frac {
			w, _ := lang(int64(d - '0'))
			s += " " + point + " " + w
			point = ""
		}
		return strings.Join(strings.Fields(s), " "), true
	}
}

var enSmall = strings.Fields("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen")
var enTens = strings.Fields("_ _ twenty thirty forty fifty sixty seventy eighty ninety")

func english(n int64) (string, string) {
	var below1000 func(int64) string
	below1000 = func(n int64) string {
		switch {
		case n < 20:
			return enSmall[n]
		case n < 100 && n%10 == 0:
			return enTens[n/10]
		case n < 100:
			return enTens[n/10] + "-" + enSmall[n%10]
		case n%100 == 0:
			return enSmall[n/100] + " hundred"
		}
		return enSmall[n/100] + " hundred and " + below1000(n%100)
	}
	if n < 1000 {
		return below1000(n), "point"
	}
	s := below1000(n/1000) + " thousand"
	if n%1000 != 0 {
		s += " " + below1000(n%1000)
	}
	return s, "point"
}

var deSmall = strings.Fields("null eins zwei drei vier fünf sechs sieben acht neun zehn elf zwölf dreizehn vierzehn fünfzehn sechzehn siebzehn achtzehn neunzehn")
var deTens = strings.Fields("_ _ zwanzig dreißig vierzig fünfzig sechzig siebzig achtzig neunzig")

func german(n int64) (string, string) {
	below100 := func(n int64, alone bool) string {
		switch {
		case n == 1 && !alone:
			return "ein"
		case n < 20:
			return deSmall[n]
		case n%10 == 0:
			return deTens[n/10]
		}
		u := deSmall[n%10]
		if n%10 == 1 {
			u = "ein"
		}
		return u + "und" + deTens[n/10]
	}
	below1000 := func(n int64, alone bool) string {
		s := ""
		if n >= 100 {
			s = below100(n/100, false) + "hundert"
		}
		if n%100 != 0 || n < 100 {
			s += below100(n%100, alone)
		}
		return s
	}
	if n < 1000 {
		return below1000(n, true), "Komma"
	}
	s := below1000(n/1000, false) + "tausend"
	if n%1000 != 0 {
		s += below1000(n%1000, true)
	}
	return s, "Komma"
}

var frSmall = strings.Fields("zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze seize dix-sept dix-huit dix-neuf")
var frTens = strings.Fields("_ _ vingt trente quarante cinquante soixante soixante quatre-vingt quatre-vingt")

func french(n int64) (string, string) {
	below100 := func(n int64) string {
		switch t, u := n/10, n%10; {
		case n < 20:
			return frSmall[n]
		case n == 80:
			return "quatre-vingts"
		case t == 7 || t == 9:
			if n == 71 {
				return "soixante et onze"
			}
			return frTens[t] + "-" + frSmall[10+u]
		case u == 0:
			return frTens[t]
		case u == 1 && t < 8:
			return frTens[t] + " et un"
		default:
			return frTens[t] + "-" + frSmall[u]
		}
	}
	below1000 := func(n int64) string {
		switch h, r := n/100, n%100; {
		case h == 0:
			return below100(r)
		case h == 1 && r == 0:
			return "cent"
		case h == 1:
			return "cent " + below100(r)
		case r == 0:
			return frSmall[h] + " cents"
		default:
			return frSmall[h] + " cent " + below100(r)
		}
	}
	if n < 1000 {
		return below1000(n), "virgule"
	}
	s := "mille"
	if n/1000 > 1 {
		s = below1000(n/1000) + " mille"
	}
	if n%1000 != 0 {
		s += " " + below1000(n%1000)
	}
	return s, "virgule"
}

var esSmall = strings.Fields("cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce trece catorce quince dieciséis diecisiete dieciocho diecinueve " +
	"veinte veintiuno veintidós veintitrés veinticuatro veinticinco veintiséis veintisiete veintiocho veintinueve")
var esTens = strings.Fields("_ _ _ treinta cuarenta cincuenta sesenta setenta ochenta noventa")
var esHundreds = strings.Fields("_ ciento doscientos trescientos cuatrocientos quinientos seiscientos setecientos ochocientos novecientos")

func spanish(n int64) (string, string) {
	below100 := func(n int64) string {
		switch {
		case n < 30:
			return esSmall[n]
		case n%10 == 0:
			return esTens[n/10]
		}
		return esTens[n/10] + " y " + esSmall[n%10]
	}
	below1000 := func(n int64) string {
		switch h, r := n/100, n%100; {
		case h == 0:
			return below100(r)
		case n == 100:
			return "cien"
		case r == 0:
			return esHundreds[h]
		default:
			return esHundreds[h] + " " + below100(r)
		}
	}
	if n < 1000 {
		return below1000(n), "coma"
	}
	s := "mil"
	if n/1000 > 1 {
		s = below1000(n/1000) + " mil"
	}
	if n%1000 != 0 {
		s += " " + below1000(n%1000)
	}
	return s, "coma"
}

func roman(n int) string {
	var b strings.Builder
	for _, p := range []struct {
		v int
		s string
	}{{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"}, {100, "C"}, {90, "XC"}, {50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"}} {
		for ; n >= p.v; n -= p.v {
			b.WriteString(p.s)
		}
	}
	return b.String()
}

// units are the unit spellings a figure may carry, with the unit each
// reads as.
var units = []struct {
	text string
	unit ground.Unit
}{
	{"%", ground.UnitPercent}, {" %", ground.UnitPercent}, {"pc", ground.UnitPercent}, {" per cent", ground.UnitPercent},
	{" percent", ground.UnitPercent}, {" Prozent", ground.UnitPercent}, {" pour cent", ground.UnitPercent}, {" por ciento", ground.UnitPercent},
	{"°C", ground.UnitCelsius}, {" °F", ground.UnitFahrenheit}, {" K", ground.UnitKelvin}, {" degrees F", ground.UnitFahrenheit},
	{" GiB", ground.UnitBytes}, {" GB", ground.UnitBytes}, {" bytes", ground.UnitBytes},
	{" ms", ground.UnitSeconds}, {" hours", ground.UnitSeconds}, {" Stunden", ground.UnitSeconds},
	{"x", ground.UnitFactor}, {" fois", ground.UnitFactor}, {" processes", ground.UnitCount},
}

// aloneWords are number words that read as a figure alone only before a
// unit, not before a noun.
var aloneWords = map[string]bool{"one": true, "null": true, "eins": true, "elf": true, "un": true, "sept": true, "neuf": true,
	"seize": true, "cent": true, "uno": true, "dos": true, "once": true, "mil": true,
	// Roman numerals that are letters or acronyms ("I/O", "CI", "DC").
	"I": true, "V": true, "X": true, "L": true, "C": true, "D": true, "M": true, "CC": true, "CD": true, "CI": true, "CLI": true,
	"CM": true, "CV": true, "DC": true, "DI": true, "DIV": true, "DM": true, "LI": true, "MC": true, "MD": true, "MI": true,
	"MIX": true, "MM": true, "VI": true, "XL": true}

// TestFigureNotationsRoundTrip: a number rendered in any notation the
// grammar knows, with any unit spelling, reads back as that number, at
// that precision, in that unit.
func TestFigureNotationsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dec := rapid.IntRange(0, 3).Draw(t, "decimals")
		n := rapid.Int64Range(0, 2_000_000).Draw(t, "n")
		nt := rapid.SampledFrom(notations).Draw(t, "notation")
		u := rapid.SampledFrom(units).Draw(t, "unit")
		text, ok := nt.render(n, dec)
		if !ok {
			t.Skip("not expressible")
		}
		if r := []rune(u.text)[0]; unicode.IsLetter(r) && unicode.IsLetter([]rune(text)[len([]rune(text))-1]) {
			u.text = " " + u.text // a word glued to a letter is another word
		}
		if u.unit == ground.UnitCount && aloneWords[text] {
			t.Skip("a word that is a figure only before a unit") // "one process": a pronoun, "sept" a month
		}
		in := text + u.text
		got := ground.ReadFigures(in)
		want := float64(n) / math.Pow10(dec)
		if len(got) != 1 || got[0].Value != want || got[0].Decimals != dec || got[0].Unit != u.unit || got[0].Text != text {
			t.Fatalf("%s %q read as %+v, want %s %v at %d decimals in %q", nt.name, in, got, text, want, dec, u.unit)
		}
	})
}

// FuzzReadFigures: the grammar never panics, reads the same text the
// same way, gives each figure a finite value taken from the text, and a
// figure written back canonically reads as the same value and unit.
func FuzzReadFigures(f *testing.F) {
	for _, s := range []string{"9.97e1%", "10x", "99pc", "a hundred percent", "hundreds", "twice the trigger", "neunundneunzig Prozent",
		"quatre-vingt-dix-neuf pour cent", "XCIX %", "41 processes OOM-killed", "41 ms", "49°F", "49 K", "41.40%", "120°F",
		"1e999%", "-1,234.5e-7 GiB", "٤١٫٤", "ⅫⅫ", "zweihundertzweiundzwanzigtausend", "one and a half hours"} {
		f.Add(s)
	}
	canon := map[ground.Unit]string{"": "", ground.UnitPercent: "%", ground.UnitBytes: " bytes", ground.UnitSeconds: " s",
		ground.UnitCelsius: " °C", ground.UnitFahrenheit: " °F", ground.UnitKelvin: " K", ground.UnitCount: " items", ground.UnitFactor: "x"}
	f.Fuzz(func(t *testing.T, text string) {
		got := ground.ReadFigures(text)
		if again := ground.ReadFigures(text); !reflect.DeepEqual(got, again) {
			t.Fatalf("read twice differently: %+v, %+v", got, again)
		}
		for _, fg := range got {
			if fg.Text == "" || !strings.Contains(text, fg.Text) || math.IsNaN(fg.Value) || math.IsInf(fg.Value, 0) || fg.Decimals < 0 {
				t.Fatalf("figure %+v of %q", fg, text)
			}
			if fg.Unreadable {
				if fg.Value != 0 || fg.Unit != "" {
					t.Fatalf("unreadable figure %+v has a value", fg)
				}
				continue
			}
			u, ok := canon[fg.Unit]
			if !ok || fg.Decimals > 20 {
				continue
			}
			back := strconv.FormatFloat(fg.Value, 'f', fg.Decimals, 64) + u
			rb := ground.ReadFigures(back)
			if len(rb) != 1 || rb[0].Unit != fg.Unit || strconv.FormatFloat(rb[0].Value, 'f', fg.Decimals, 64) != strconv.FormatFloat(fg.Value, 'f', fg.Decimals, 64) {
				t.Fatalf("%+v written back as %q reads %+v", fg, back, rb)
			}
		}
	})
}

// figureCorpus: vm/103 at 41.4 % memory, vm/101 at 91 %, a disk at
// 49 °C with two pending sectors, a storage with 40 GiB used.
func figureCorpus() *ground.Corpus {
	c := ground.NewCorpus()
	for _, r := range []string{
		`{"id":"vm/103","metrics":{"memory_percent":41.4,"cpu_percent":12}}`,
		`{"id":"vm/101","metrics":{"memory_percent":91}}`,
		`{"id":"disk/pve1/sdb","smart":{"temperature_c":49,"pending_sectors":2}}`,
		`{"id":"storage/pve1/local","usage":{"used_bytes":42949672960,"usage_percent":40}}`,
	} {
		c.Add([]byte(r))
	}
	return c
}

type groundCase struct {
	resource, text string
	unsupported    []string
}

func checkGround(t *testing.T, cases []groundCase) {
	t.Helper()
	c := figureCorpus()
	for _, tc := range cases {
		got := c.Unsupported(tc.resource, "", nil, tc.text)
		if !slices.Equal(got, tc.unsupported) {
			t.Errorf("%s %q: unsupported %q, want %q", tc.resource, tc.text, got, tc.unsupported)
		}
	}
}

// TestGroundUnits: a figure grounds a quantity only in a unit that
// agrees with it: a count, a duration or a factor never grounds a
// percent; bytes convert between multiples; a fraction is no percent.
func TestGroundUnits(t *testing.T) {
	checkGround(t, []groundCase{
		{"vm/103", "memory 41%", nil},
		{"vm/103", "memory_percent 41.4", nil},
		{"vm/103", "memory: 41 processes OOM-killed", []string{"41 count (memory)"}},
		{"vm/103", "memory 41 ms", []string{"41 seconds (memory)"}},
		{"vm/103", "memory 41 hours", []string{"41 seconds (memory)"}},
		{"vm/103", "memory 10x", []string{"10 factor (memory)"}},
		{"vm/103", "memory twice the trigger", []string{"twice factor (memory)"}},
		{"vm/103", "memory at half", []string{"half ratio (memory)"}},
		{"vm/103", "memory 41 GB", []string{"41 bytes (memory)"}},
		{"storage/pve1/local", "usage 40 GiB, usage 42.9 GB, usage 42949672960 bytes, usage 40%", nil},
		{"storage/pve1/local", "usage 43 GiB", []string{"43 bytes (usage)"}},
		{"storage/pve1/local", "usage 40 processes", []string{"40 count (usage)"}},
		{"disk/pve1/sdb", "2 pending sectors", nil},
		{"disk/pve1/sdb", "2% pending", []string{"2 % (pending)"}},
	})
}

// TestGroundTemperature: °C, °F and K convert; a disk at 49 °C is at
// 120 °F and 322 K, not at 49 °F or 49 K.
func TestGroundTemperature(t *testing.T) {
	checkGround(t, []groundCase{
		{"disk/pve1/sdb", "temperature 49 °C", nil},
		{"disk/pve1/sdb", "temperature 120°F", nil},
		{"disk/pve1/sdb", "temperature 120.2 degrees Fahrenheit", nil},
		{"disk/pve1/sdb", "temperature 322 K", nil},
		{"disk/pve1/sdb", "temperature 322.15 kelvin", nil},
		{"disk/pve1/sdb", "temperature 49°F", []string{"49 fahrenheit (temperature)"}},
		{"disk/pve1/sdb", "temperature 49 K", []string{"49 kelvin (temperature)"}},
		{"disk/pve1/sdb", "temperature 121 °F", []string{"121 fahrenheit (temperature)"}},
		{"disk/pve1/sdb", "temperature 49%", []string{"49 % (temperature)"}},
	})
}

// TestGroundPrecision: precision is honoured both ways: a figure equals
// the measurement rounded to the figure's decimals ("41%" and "41.40%"
// are 41.4), and a figure finer than the measurement is not it.
func TestGroundPrecision(t *testing.T) {
	checkGround(t, []groundCase{
		{"vm/103", "memory 41.40%, memory 41.4000 %, memory 41 %, memory 4.14e1%, memory 4.1e1%", nil},
		{"vm/103", "memory forty-one point four percent", nil},
		{"vm/103", "memory 41.43%", []string{"41.43 % (memory)"}},
		{"vm/103", "memory 41.5%", []string{"41.5 % (memory)"}},
		{"vm/103", "memory 4e1%", []string{"4e1 % (memory)"}},
		{"vm/101", "memory 91.0%, memory 91%", nil},
		{"vm/101", "memory 91.4%", []string{"91.4 % (memory)"}},
	})
}

// TestGroundUnreadable: a figure the grammar cannot read ("hundreds")
// makes the claim unsupported, and a note loses it.
func TestGroundUnreadable(t *testing.T) {
	checkGround(t, []groundCase{
		{"vm/103", "memory at hundreds of percent", []string{"hundreds (unreadable figure)"}},
		{"vm/103", "memory 41%, Hunderte Prozesse", []string{"Hunderte (unreadable figure)"}},
		{"vm/103", "des centaines de processus, millions of pages", []string{"centaines (unreadable figure)", "millions (unreadable figure)"}},
	})
	got, stripped := figureCorpus().Strip("vm/103", "", nil, "memory 41%, hundreds of pages", "[x]")
	if got != "memory 41%, [x] of pages" || !slices.Equal(stripped, []string{"hundreds"}) {
		t.Errorf("Strip = %q %q", got, stripped)
	}
}
