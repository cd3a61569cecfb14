package ground

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The figure grammar: one reader for every way a claim may write a
// figure. Grounding sees only what it reads, so a form it does not know
// would be a figure nobody checks. See docs/MODEL_STAGES.md#one-figure-grammar.

// Units a figure may carry besides the ones a quantity has. A count and
// a factor are dimensions of their own, so they never ground a percent.
const (
	UnitFahrenheit Unit = "fahrenheit"
	UnitKelvin     Unit = "kelvin"
	UnitCount      Unit = "count"  // "41 processes"
	UnitFactor     Unit = "factor" // "10x", "twice"
	UnitRatio      Unit = "ratio"  // "half", "three quarters"
)

// unitDef is a unit as written: its unit, its scales to the unit's base
// and an offset (base = value*scale + offset).
type unitDef struct {
	unit   Unit
	scales []float64
	offset float64
}

func plain(u Unit) unitDef { return unitDef{unit: u, scales: []float64{1}} }

// The temperatures convert to degrees Celsius, the base every
// temperature quantity is shown in.
var (
	celsius    = plain(UnitCelsius)
	fahrenheit = unitDef{unit: UnitFahrenheit, scales: []float64{5.0 / 9}, offset: -160.0 / 9}
	kelvin     = unitDef{unit: UnitKelvin, scales: []float64{1}, offset: -273.15}
	percent    = plain(UnitPercent)
	factor     = plain(UnitFactor)
)

// unitWords are the units written as a word after a figure, lower-cased
// and without accents. Byte multiples carry the decimal and the binary
// scale.
var unitWords = func() map[string]unitDef {
	m := map[string]unitDef{
		"pc": percent, "pct": percent, "percent": percent, "pourcent": percent, "prozent": percent, "porciento": percent,
		"c": celsius, "celsius": celsius, "degree": celsius, "degrees": celsius, "grad": celsius, "grados": celsius, "degres": celsius,
		"fahrenheit": fahrenheit, "kelvin": kelvin,
		"b": plain(UnitBytes), "byte": plain(UnitBytes), "bytes": plain(UnitBytes), "octet": plain(UnitBytes), "octets": plain(UnitBytes),
		"x": factor, "fois": factor, "veces": factor, "mal": factor,
	}
	for i, p := range []string{"k", "m", "g", "t", "p", "e"} {
		dec, bin := math.Pow(1000, float64(i+1)), math.Pow(1024, float64(i+1))
		m[p+"b"] = unitDef{UnitBytes, []float64{dec, bin}, 0}
		m[p+"ib"] = unitDef{UnitBytes, []float64{bin}, 0}
	}
	for _, w := range []string{"kilobyte", "megabyte", "gigabyte", "terabyte", "petabyte", "exabyte"} {
		s := m[w[:1]+"b"]
		m[w], m[w+"s"] = s, s
	}
	for scale, words := range map[float64][]string{
		1e-9: {"ns", "nanosecond", "nanoseconds"}, 1e-6: {"us", "µs", "μs", "microsecond", "microseconds"},
		1e-3:   {"ms", "msec", "millisecond", "milliseconds", "millisekunden", "millisecondes", "milisegundos"},
		1:      {"s", "sec", "secs", "second", "seconds", "sekunde", "sekunden", "seconde", "secondes", "segundo", "segundos"},
		60:     {"min", "mins", "minute", "minutes", "minuten", "minuto", "minutos"},
		3600:   {"h", "hr", "hrs", "hour", "hours", "stunde", "stunden", "heure", "heures", "hora", "horas"},
		86400:  {"d", "day", "days", "tage", "tagen", "jour", "jours", "dia", "dias"},
		604800: {"w", "wk", "wks", "week", "weeks", "woche", "wochen", "semaine", "semaines", "semana", "semanas"},
	} {
		for _, w := range words {
			m[w] = unitDef{UnitSeconds, []float64{scale}, 0}
		}
	}
	return m
}()

// unitPhrases are units of two words ("per cent", "degrees F").
var unitPhrases = map[string]unitDef{
	"per cent": percent, "pour cent": percent, "por ciento": percent, "por cien": percent,
	"degrees c": celsius, "degrees celsius": celsius, "degree celsius": celsius, "grad celsius": celsius,
	"degres celsius": celsius, "grados celsius": celsius,
	"degrees f": fahrenheit, "degrees fahrenheit": fahrenheit, "degree fahrenheit": fahrenheit,
	"grad fahrenheit": fahrenheit, "degres fahrenheit": fahrenheit, "grados fahrenheit": fahrenheit,
}

// unitSymbols are the units written as a sign; a degree sign takes the
// letter after it.
var unitSymbols = map[string]unitDef{
	"%": percent, "‰": {UnitPercent, []float64{0.1}, 0}, "×": factor,
	"℃": celsius, "℉": fahrenheit, "K": kelvin, "F": fahrenheit,
}

// degreeUnits are the letters after a degree sign.
var degreeUnits = []struct {
	letter string
	def    unitDef
}{
	{"C", celsius}, {"c", celsius},
	//mutate:ground-temperature-converts ./model/ground,./cmd/patrold ^(TestGroundTemperature|TestFigureClaims)
	{"F", fahrenheit},
	{"f", fahrenheit},
	{"K", kelvin},
}

// timesFactor: "N times" is a factor when what it multiplies follows
// ("3 times the trigger"); otherwise "times" counts ("raised 3 times").
var timesFactor = map[string]bool{"the": true, "its": true, "their": true, "as": true, "what": true, "more": true, "higher": true, "over": true, "above": true}

// unitAfter reads the unit written right after a figure, glued or after
// one space. Each word unit must end where its word ends ("0x10" is no
// factor).
func unitAfter(s string, i int) (unitDef, int, bool) {
	j := i
	if j < len(s) && s[j] == ' ' {
		j++
	}
	if j >= len(s) {
		return unitDef{}, i, false
	}
	for _, deg := range []string{"°", "º"} {
		if strings.HasPrefix(s[j:], deg) {
			end := j + len(deg)
			k := end
			if k < len(s) && s[k] == ' ' {
				k++
			}
			for _, d := range degreeUnits {
				if strings.HasPrefix(s[k:], d.letter) && wordEnds(s, k+1) {
					return d.def, k + 1, true
				}
			}
			return celsius, end, true
		}
	}
	r, n := utf8.DecodeRuneInString(s[j:])
	if d, ok := unitSymbols[string(r)]; ok && (unicode.IsSymbol(r) || unicode.IsPunct(r) || wordEnds(s, j+n)) {
		return d, j + n, true
	}
	k := letterRun(s, j)
	if k == j || !wordEnds(s, k) {
		return unitDef{}, i, false
	}
	w := foldWord(s[j:k])
	if k+1 < len(s) && s[k] == ' ' {
		if k2 := letterRun(s, k+1); k2 > k+1 && wordEnds(s, k2) {
			if d, ok := unitPhrases[w+" "+foldWord(s[k+1:k2])]; ok {
				return d, k2, true
			}
			if w == "times" && timesFactor[foldWord(s[k+1:k2])] {
				return factor, k, true
			}
		}
	}
	if d, ok := unitWords[w]; ok {
		return d, k, true
	}
	return unitDef{}, i, false
}

// letterRun is the end of the run of letters at s[i:].
func letterRun(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) {
			break
		}
		i += n
	}
	return i
}

// wordEnds reports that no letter, digit or underscore follows s[:i].
func wordEnds(s string, i int) bool {
	if i >= len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !isWordRune(r)
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || r == '_' || unicode.IsDigit(r) }

// accents folds the accented letters of the four languages' number
// words and units to their base letter.
var accents = strings.NewReplacer("é", "e", "è", "e", "ê", "e", "á", "a", "à", "a", "í", "i", "ó", "o", "ú", "u",
	"ñ", "n", "ä", "a", "ö", "o", "ü", "u", "ß", "ss", "ç", "c", "É", "e")

// foldWord is a word lower-cased without accents.
func foldWord(w string) string { return accents.Replace(strings.ToLower(w)) }

// digitValue is the value of a decimal digit of any script. Unicode lays
// out decimal digits in runs of ten that start at zero.
func digitValue(r rune) (int, bool) {
	if r >= '0' && r <= '9' {
		return int(r - '0'), true
	}
	if r < utf8.RuneSelf || !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	for _, rg := range unicode.Nd.R16 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if r >= rune(rg.Lo) && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	return 0, false
}

// digitsAt reads a run of digits of any script at s[i:], in ASCII.
func digitsAt(s string, i int) (string, int) {
	var b strings.Builder
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		d, ok := digitValue(r)
		if !ok {
			break
		}
		b.WriteByte(byte('0' + d))
		i += n
	}
	return b.String(), i
}

// number is a figure's value before its unit: the ASCII form it parses
// from and the precision it shows.
type number struct {
	ascii    string
	decimals int
	scale    float64 // a scale word after the digits ("1.5 million")
}

// readDigits reads a figure in digits at s[i:]: an optional sign, digits
// of any script in thousands groups ("1,024"), a decimal part (a point,
// or a comma and one or two digits: "41,4"), an exponent ("9.97e1").
func readDigits(s string, i int) (number, int, bool) {
	var b strings.Builder
	j := i
	if strings.HasPrefix(s[j:], "−") {
		b.WriteByte('-')
		j += len("−")
	} else if j < len(s) && (s[j] == '-' || s[j] == '+') {
		b.WriteByte(s[j])
		j++
	}
	int0, k := digitsAt(s, j)
	if int0 == "" {
		return number{}, i, false
	}
	b.WriteString(int0)
	j = k
	frac, grouped := "", false
	for len(int0) <= 3 && j+1 < len(s) && s[j] == ',' {
		g, k := digitsAt(s, j+1)
		if len(g) != 3 {
			break
		}
		b.WriteString(g)
		j, grouped = k, true
	}
	if j+1 < len(s) && (s[j] == '.' || (s[j] == ',' && !grouped)) {
		if f, k := digitsAt(s, j+1); f != "" && (s[j] == '.' || len(f) <= 2) {
			frac, j = f, k
		}
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	dec := len(frac)
	if j+1 < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		sign := ""
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			sign, k = s[k:k+1], k+1
		}
		if e, k2 := digitsAt(s, k); e != "" && len(e) <= 3 {
			exp, _ := strconv.Atoi(sign + e)
			b.WriteString("e" + sign + e)
			dec, j = max(dec-exp, 0), k2
		}
	}
	return number{ascii: b.String(), decimals: dec, scale: 1}, j, true
}

// value is the number's value, NaN when it is none (an overflow).
func (n number) value() float64 {
	v, err := strconv.ParseFloat(n.ascii, 64)
	if err != nil || math.IsInf(v*n.scale, 0) {
		return math.NaN()
	}
	return v * n.scale
}

// Number words. Each word is a morpheme of the grammar; German writes
// them as one word ("neunundneunzig"), cut by compoundPieces.
type mkind uint8

const (
	mNum      mkind = iota + 1 // zero to ninety-nine
	mHundred                   // multiplies what stands before it by a hundred
	mHundreds                  // a whole hundreds ("doscientos")
	mScale                     // thousand, million: multiplies the group before it
	mDozen                     // multiplies what stands before it by twelve
	mArticle                   // "a hundred", "a dozen", "a half"
	mConn                      // and, und, et, y
	mPoint                     // the decimal point in words
	mFactor                    // twice
	mHalf                      // a fraction: half
	mQuarter                   // a fraction: quarter
	mVague                     // hundreds, dozens: no value the grammar can read
	mTimes                     // the -mal and -fach of German factors
)

type morph struct {
	kind  mkind
	value int64
	// plural: a scale that needs a number before it ("deux cents");
	// alone, it is vague ("millions") or no figure ("cents").
	plural bool
	// alone: a word that is a figure alone only with a unit after it
	// (an article, "once", "null", "sept").
	alone bool
	// before: a factor only before what it multiplies ("double the").
	before bool
}

// Number words by language. Keys are folded (foldWord).
var numberWords = map[string]map[string]morph{
	"en": {
		"zero": {kind: mNum}, "one": {kind: mNum, value: 1, alone: true}, "two": {kind: mNum, value: 2}, "three": {kind: mNum, value: 3},
		"four": {kind: mNum, value: 4}, "five": {kind: mNum, value: 5}, "six": {kind: mNum, value: 6}, "seven": {kind: mNum, value: 7},
		"eight": {kind: mNum, value: 8}, "nine": {kind: mNum, value: 9}, "ten": {kind: mNum, value: 10}, "eleven": {kind: mNum, value: 11},
		"twelve": {kind: mNum, value: 12}, "thirteen": {kind: mNum, value: 13}, "fourteen": {kind: mNum, value: 14},
		"fifteen": {kind: mNum, value: 15}, "sixteen": {kind: mNum, value: 16}, "seventeen": {kind: mNum, value: 17},
		"eighteen": {kind: mNum, value: 18}, "nineteen": {kind: mNum, value: 19}, "twenty": {kind: mNum, value: 20},
		"thirty": {kind: mNum, value: 30}, "forty": {kind: mNum, value: 40}, "fifty": {kind: mNum, value: 50}, "sixty": {kind: mNum, value: 60},
		"seventy": {kind: mNum, value: 70}, "eighty": {kind: mNum, value: 80}, "ninety": {kind: mNum, value: 90},
		"hundred": {kind: mHundred, value: 100}, "thousand": {kind: mScale, value: 1e3}, "million": {kind: mScale, value: 1e6},
		"billion": {kind: mScale, value: 1e9}, "millions": {kind: mScale, value: 1e6, plural: true}, "billions": {kind: mScale, value: 1e9, plural: true},
		"hundreds": {kind: mVague}, "thousands": {kind: mVague}, "dozens": {kind: mVague},
		"dozen": {kind: mDozen, value: 12}, "a": {kind: mArticle, value: 1, alone: true}, "an": {kind: mArticle, value: 1, alone: true},
		"and": {kind: mConn}, "point": {kind: mPoint},
		"twice": {kind: mFactor, value: 2}, "thrice": {kind: mFactor, value: 3},
		"double": {kind: mFactor, value: 2, before: true}, "triple": {kind: mFactor, value: 3, before: true},
		"quadruple": {kind: mFactor, value: 4, before: true},
		"half":      {kind: mHalf}, "quarter": {kind: mQuarter, alone: true}, "quarters": {kind: mQuarter, alone: true},
	},
	"de": {
		"null": {kind: mNum, alone: true}, "eins": {kind: mNum, value: 1, alone: true}, "ein": {kind: mNum, value: 1, alone: true},
		"eine": {kind: mNum, value: 1, alone: true}, "zwei": {kind: mNum, value: 2}, "drei": {kind: mNum, value: 3},
		"vier": {kind: mNum, value: 4}, "funf": {kind: mNum, value: 5}, "sechs": {kind: mNum, value: 6}, "sieben": {kind: mNum, value: 7},
		"acht": {kind: mNum, value: 8}, "neun": {kind: mNum, value: 9}, "zehn": {kind: mNum, value: 10}, "elf": {kind: mNum, value: 11, alone: true},
		"zwolf": {kind: mNum, value: 12}, "dreizehn": {kind: mNum, value: 13}, "vierzehn": {kind: mNum, value: 14},
		"funfzehn": {kind: mNum, value: 15}, "sechzehn": {kind: mNum, value: 16}, "siebzehn": {kind: mNum, value: 17},
		"achtzehn": {kind: mNum, value: 18}, "neunzehn": {kind: mNum, value: 19}, "zwanzig": {kind: mNum, value: 20},
		"dreissig": {kind: mNum, value: 30}, "vierzig": {kind: mNum, value: 40}, "funfzig": {kind: mNum, value: 50},
		"sechzig": {kind: mNum, value: 60}, "siebzig": {kind: mNum, value: 70}, "achtzig": {kind: mNum, value: 80},
		"neunzig": {kind: mNum, value: 90}, "hundert": {kind: mHundred, value: 100}, "tausend": {kind: mScale, value: 1e3},
		"million": {kind: mScale, value: 1e6}, "millionen": {kind: mScale, value: 1e6, plural: true},
		"hunderte": {kind: mVague}, "tausende": {kind: mVague}, "dutzende": {kind: mVague},
		"dutzend": {kind: mDozen, value: 12}, "und": {kind: mConn}, "komma": {kind: mPoint},
		"doppelt": {kind: mFactor, value: 2}, "doppelte": {kind: mFactor, value: 2},
		"halfte": {kind: mHalf}, "viertel": {kind: mQuarter, alone: true},
		"mal": {kind: mTimes}, "fach": {kind: mTimes},
	},
	"fr": {
		"zero": {kind: mNum}, "un": {kind: mNum, value: 1, alone: true}, "une": {kind: mNum, value: 1, alone: true},
		"deux": {kind: mNum, value: 2}, "trois": {kind: mNum, value: 3}, "quatre": {kind: mNum, value: 4}, "cinq": {kind: mNum, value: 5},
		"six": {kind: mNum, value: 6}, "sept": {kind: mNum, value: 7, alone: true}, "huit": {kind: mNum, value: 8},
		"neuf": {kind: mNum, value: 9, alone: true}, "dix": {kind: mNum, value: 10}, "onze": {kind: mNum, value: 11},
		"douze": {kind: mNum, value: 12}, "treize": {kind: mNum, value: 13}, "quatorze": {kind: mNum, value: 14},
		"quinze": {kind: mNum, value: 15}, "seize": {kind: mNum, value: 16, alone: true}, "vingt": {kind: mNum, value: 20},
		"trente": {kind: mNum, value: 30}, "quarante": {kind: mNum, value: 40}, "cinquante": {kind: mNum, value: 50},
		"soixante": {kind: mNum, value: 60}, "vingts": {kind: mNum, value: 20, plural: true},
		"cent": {kind: mHundred, value: 100, alone: true}, "cents": {kind: mHundred, value: 100, plural: true},
		"mille": {kind: mScale, value: 1e3}, "millions": {kind: mScale, value: 1e6, plural: true},
		"centaine": {kind: mVague}, "centaines": {kind: mVague}, "milliers": {kind: mVague}, "douzaines": {kind: mVague},
		"douzaine": {kind: mDozen, value: 12}, "et": {kind: mConn}, "virgule": {kind: mPoint},
		"moitie": {kind: mHalf},
	},
	"es": {
		"cero": {kind: mNum}, "uno": {kind: mNum, value: 1, alone: true}, "una": {kind: mNum, value: 1, alone: true},
		"dos": {kind: mNum, value: 2, alone: true}, "tres": {kind: mNum, value: 3}, "cuatro": {kind: mNum, value: 4},
		"cinco": {kind: mNum, value: 5}, "seis": {kind: mNum, value: 6}, "siete": {kind: mNum, value: 7}, "ocho": {kind: mNum, value: 8},
		"nueve": {kind: mNum, value: 9}, "diez": {kind: mNum, value: 10}, "once": {kind: mNum, value: 11, alone: true},
		"doce": {kind: mNum, value: 12}, "trece": {kind: mNum, value: 13}, "catorce": {kind: mNum, value: 14}, "quince": {kind: mNum, value: 15},
		"dieciseis": {kind: mNum, value: 16}, "diecisiete": {kind: mNum, value: 17}, "dieciocho": {kind: mNum, value: 18},
		"diecinueve": {kind: mNum, value: 19}, "veinte": {kind: mNum, value: 20}, "veintiuno": {kind: mNum, value: 21},
		"veintiun": {kind: mNum, value: 21}, "veintidos": {kind: mNum, value: 22}, "veintitres": {kind: mNum, value: 23},
		"veinticuatro": {kind: mNum, value: 24}, "veinticinco": {kind: mNum, value: 25}, "veintiseis": {kind: mNum, value: 26},
		"veintisiete": {kind: mNum, value: 27}, "veintiocho": {kind: mNum, value: 28}, "veintinueve": {kind: mNum, value: 29},
		"treinta": {kind: mNum, value: 30}, "cuarenta": {kind: mNum, value: 40}, "cincuenta": {kind: mNum, value: 50},
		"sesenta": {kind: mNum, value: 60}, "setenta": {kind: mNum, value: 70}, "ochenta": {kind: mNum, value: 80},
		"noventa": {kind: mNum, value: 90}, "cien": {kind: mHundred, value: 100}, "ciento": {kind: mHundred, value: 100},
		"doscientos": {kind: mHundreds, value: 200}, "trescientos": {kind: mHundreds, value: 300},
		"cuatrocientos": {kind: mHundreds, value: 400}, "quinientos": {kind: mHundreds, value: 500},
		"seiscientos": {kind: mHundreds, value: 600}, "setecientos": {kind: mHundreds, value: 700},
		"ochocientos": {kind: mHundreds, value: 800}, "novecientos": {kind: mHundreds, value: 900},
		"mil": {kind: mScale, value: 1e3, alone: true}, "millon": {kind: mScale, value: 1e6}, "millones": {kind: mScale, value: 1e6, plural: true},
		"cientos": {kind: mVague}, "centenares": {kind: mVague}, "docenas": {kind: mVague},
		"docena": {kind: mDozen, value: 12}, "y": {kind: mConn}, "coma": {kind: mPoint}, "punto": {kind: mPoint},
		"doble": {kind: mFactor, value: 2, before: true}, "mitad": {kind: mHalf},
	},
}

// lexicon is every number word, whatever its language.
var lexicon = func() map[string]morph {
	m := map[string]morph{}
	for _, words := range numberWords {
		for w, mo := range words {
			if old, ok := m[w]; ok && old != mo && !(old.alone || mo.alone) {
				panic("ground: number word " + w + " differs between languages")
			}
			if old, ok := m[w]; !ok || old.alone {
				m[w] = mo
			}
		}
	}
	return m
}()

// compoundPieces are the German morphemes a one-word number is cut into.
var compoundPieces = func() map[string]morph {
	m := map[string]morph{}
	for w, mo := range numberWords["de"] {
		switch mo.kind {
		case mNum, mHundred, mScale, mConn, mTimes:
			mo.alone = false
			m[w] = mo
		}
	}
	return m
}()

// morphsOf cuts a folded word into number morphemes: itself, or the
// fewest German pieces that make it up; nil when it is no number word.
func morphsOf(w string) []morph {
	if mo, ok := lexicon[w]; ok {
		return []morph{mo}
	}
	if len(w) < 6 || len(w) > 64 {
		return nil
	}
	// best[i] is the fewest pieces that make up w[:i].
	best := make([][]morph, len(w)+1)
	best[0] = []morph{}
	for i := 0; i < len(w); i++ {
		if best[i] == nil {
			continue
		}
		for j := i + 1; j <= len(w); j++ {
			if mo, ok := compoundPieces[w[i:j]]; ok && (best[j] == nil || len(best[j]) > len(best[i])+1) {
				best[j] = append(append([]morph{}, best[i]...), mo)
			}
		}
	}
	return best[len(w)]
}

// wordNum is what a run of number words reads as.
type wordNum struct {
	ascii    string // the value, for a number
	decimals int
	unit     Unit // UnitFactor, UnitRatio or UnitNone
	vague    bool
}

// parseMorphs reads the longest figure at the start of ms and how many
// morphemes it took (0: none).
func parseMorphs(ms []morph) (wordNum, int) {
	if len(ms) == 0 {
		return wordNum{}, 0
	}
	at := func(i int, k mkind) bool { return i < len(ms) && ms[i].kind == k }
	switch m := ms[0]; {
	case m.kind == mVague, m.kind == mScale && m.plural:
		return wordNum{vague: true}, 1
	case m.kind == mFactor:
		return wordNum{ascii: strconv.FormatInt(m.value, 10), unit: UnitFactor}, 1
	case m.kind == mHalf:
		return wordNum{ascii: "0.5", decimals: 1, unit: UnitRatio}, 1
	case m.kind == mArticle && at(1, mHalf):
		return wordNum{ascii: "0.5", decimals: 1, unit: UnitRatio}, 2
	case m.kind == mArticle && at(1, mQuarter) && !ms[1].plural:
		return wordNum{ascii: "0.25", decimals: 2, unit: UnitRatio}, 2
	}
	v, n := parseInt(ms)
	if n == 0 {
		return wordNum{}, 0
	}
	switch {
	case at(n, mQuarter) && v >= 1 && v <= 3:
		return wordNum{ascii: strconv.FormatFloat(float64(v)/4, 'f', -1, 64), decimals: 2, unit: UnitRatio}, n + 1
	case at(n, mHalf) && v == 1:
		return wordNum{ascii: "0.5", decimals: 1, unit: UnitRatio}, n + 1
	case at(n, mConn) && at(n+1, mArticle) && at(n+2, mHalf):
		return wordNum{ascii: strconv.FormatInt(v, 10) + ".5", decimals: 1}, n + 3
	case at(n, mTimes) && v > 1:
		return wordNum{ascii: strconv.FormatInt(v, 10), unit: UnitFactor}, n + 1
	case at(n, mPoint) && at(n+1, mNum) && ms[n+1].value < 10:
		frac := ""
		j := n + 1
		for at(j, mNum) && ms[j].value < 10 {
			frac += strconv.FormatInt(ms[j].value, 10)
			j++
		}
		return wordNum{ascii: strconv.FormatInt(v, 10) + "." + frac, decimals: len(frac)}, j
	}
	return wordNum{ascii: strconv.FormatInt(v, 10)}, n
}

// parseInt reads a whole number: groups below a thousand, each times a
// scale smaller than the one before ("two million three thousand five").
func parseInt(ms []morph) (int64, int) {
	var total int64
	i, last := 0, int64(math.MaxInt64)
	for {
		g, j := parseGroup(ms, i)
		if j < len(ms) && ms[j].kind == mScale && ms[j].value < last && (j > i || !ms[j].plural) {
			if j == i {
				g = 1 // "mille", "mil", "tausend": a thousand
			}
			if j > i && ms[j].plural && g < 2 {
				break
			}
			total += g * ms[j].value
			last, i = ms[j].value, j+1
			if i+1 < len(ms) && ms[i].kind == mConn {
				if _, k := parseGroup(ms, i+1); k > i+1 {
					i++ // "a thousand and five"
				}
			}
			continue
		}
		if j > i {
			total, i = total+g, j
		}
		break
	}
	return total, i
}

// parseGroup reads a number below a thousand at ms[i:]: hundreds, then
// what is below a hundred; or a dozen times a number.
func parseGroup(ms []morph, i int) (int64, int) {
	at := func(j int, k mkind) bool { return j < len(ms) && ms[j].kind == k }
	h, j := int64(-1), i
	switch {
	case at(j, mHundreds):
		h, j = ms[j].value, j+1
	case at(j, mHundred) && !ms[j].plural:
		h, j = 100, j+1
	case at(j, mArticle) && at(j+1, mHundred) && !ms[j+1].plural:
		h, j = 100, j+2
	default:
		if v, k := below100(ms, j); k > j && at(k, mHundred) && (v > 1 || !ms[k].plural) {
			h, j = v*100, k+1
		}
	}
	if h >= 0 {
		k := j
		if at(k, mConn) {
			k++
		}
		if v, k2 := below100(ms, k); k2 > k {
			return h + v, k2
		}
		return h, j
	}
	if at(j, mArticle) && at(j+1, mDozen) {
		return 12, j + 2
	}
	if at(j, mDozen) {
		return 12, j + 1
	}
	v, k := below100(ms, j)
	if k > j && at(k, mDozen) {
		return v * 12, k + 1
	}
	return v, k
}

// below100 reads a number below a hundred: one word, tens then a unit
// ("forty-one", "treinta y uno", "soixante-dix-sept", "quatre-vingt-un")
// or a unit, und, tens ("einundzwanzig").
func below100(ms []morph, i int) (int64, int) {
	isNum := func(j int) bool { return j < len(ms) && ms[j].kind == mNum }
	if !isNum(i) || ms[i].plural {
		return 0, i
	}
	v, j := ms[i].value, i+1
	if v == 4 && isNum(j) && ms[j].value == 20 { // quatre-vingt(s)
		v, j = 80, j+1
	}
	if v > 0 && v < 10 && j+1 < len(ms) && ms[j].kind == mConn && isNum(j+1) && ms[j+1].value >= 20 && ms[j+1].value%10 == 0 && !ms[j+1].plural {
		return v + ms[j+1].value, j + 2
	}
	last := v
	for range 2 {
		k := j
		if k < len(ms) && ms[k].kind == mConn {
			k++
		}
		if !isNum(k) || ms[k].plural {
			break
		}
		next := ms[k].value
		if last < 10 || next == 0 || next >= last || v+next >= 100 || (next >= 10 && last != 60 && last != 80) {
			break
		}
		v, last, j = v+next, next, k+1
	}
	return v, j
}

// romanAcronyms are upper-case words that spell a Roman numeral but are
// read as names unless a unit follows ("CI", "DC").
var romanAcronyms = map[string]bool{"CC": true, "CD": true, "CI": true, "CLI": true, "CM": true, "CV": true, "DC": true, "DI": true,
	"DIV": true, "DM": true, "LI": true, "MC": true, "MD": true, "MI": true, "MIX": true, "MM": true, "VI": true, "XL": true}

// unicodeRoman are the Roman numeral characters, as letters.
var unicodeRoman = []string{"I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII", "L", "C", "D", "M"}

// romanValue is the value of a canonical Roman numeral (1 to 3999).
func romanValue(w string) (int, bool) {
	if w == "" || len(w) > 15 {
		return 0, false
	}
	val := map[byte]int{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}
	w = strings.ToUpper(w)
	total := 0
	for i := 0; i < len(w); i++ {
		v, ok := val[w[i]]
		if !ok {
			return 0, false
		}
		if i+1 < len(w) && val[w[i+1]] > v {
			total -= v
		} else {
			total += v
		}
	}
	return total, total > 0 && total < 4000 && toRoman(total) == w
}

// toRoman writes n (1 to 3999) as a canonical Roman numeral.
func toRoman(n int) string {
	var b strings.Builder
	for _, p := range []struct {
		v int
		s string
	}{{1000, "M"}, {900, "CM"}, {500, "D"}, {400, "CD"}, {100, "C"}, {90, "XC"}, {50, "L"}, {40, "XL"}, {10, "X"}, {9, "IX"}, {5, "V"}, {4, "IV"}, {1, "I"}} {
		for n >= p.v {
			b.WriteString(p.s)
			n -= p.v
		}
	}
	return b.String()
}

// countStop are words after a bare figure that do not name what it
// counts ("91 above the trigger", "41 on vm/103").
var countStop = func() map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq(`a an the and or but nor so then than as at on in into onto of off for to from by with within without
		per via vs versus after before during since until till while when where which who that this these those is are was were be been
		being has have had it its not no now today currently still again already only just ago old about around across between against
		toward towards through up down out left free used full high low more less most least ok i e g
		und oder bei auf im von seit ist sind der die das mit et ou au du des le la les sur dans est sont depuis avec
		y o al del el los las en es son con desde sobre`) {
		m[w] = true
	}
	return m
}()

// countNoun reports a word after a bare figure that names what the
// figure counts ("41 processes"): a word that is no unit, quantity,
// threshold, number or connecting word.
func countNoun(s string, i int) bool {
	if i >= len(s) || s[i] != ' ' {
		return false
	}
	k := letterRun(s, i+1)
	if k == i+1 {
		return false
	}
	w := foldWord(s[i+1 : k])
	_, num := lexicon[w]
	return !num && !countStop[w] && wordFamily(w) == "" && !thresholdWords[w]
}

// readFigure reads the figure that starts at s[i], if one does: a
// number in digits, in words or in Roman numerals, with its unit. A
// figure in words the grammar cannot give a value ("hundreds") is
// returned Unreadable. end is where the figure and its unit end.
func readFigure(s string, i int) (f Figure, numEnd, end int, ok bool) {
	r, _ := utf8.DecodeRuneInString(s[i:])
	var num number
	switch {
	case r == '-' || r == '+' || r == '−' || unicode.IsDigit(r):
		num, numEnd, ok = readDigits(s, i)
		if !ok {
			return Figure{}, 0, 0, false
		}
		if scale, k, ok := scaleAfter(s, numEnd); ok {
			num.scale, num.decimals, numEnd = scale, max(num.decimals-int(math.Round(math.Log10(scale))), 0), k
		}
	case r >= 0x2160 && r <= 0x217F:
		var w strings.Builder
		numEnd = i
		for numEnd < len(s) {
			r, n := utf8.DecodeRuneInString(s[numEnd:])
			if r < 0x2160 || r > 0x217F {
				break
			}
			w.WriteString(unicodeRoman[(r-0x2160)%16])
			numEnd += n
		}
		v, ok := romanValue(w.String())
		if !ok {
			return Figure{}, 0, 0, false
		}
		num = number{ascii: strconv.Itoa(v), scale: 1}
	case unicode.IsLetter(r):
		k := letterRun(s, i)
		word := s[i:k]
		// An upper-case numeral is Roman; a lower-case one is a word
		// first ("dix") and Roman only before a unit ("xcix%").
		v, roman := romanValue(word)
		_, _, unit := unitAfter(s, k)
		upper := strings.ToUpper(word) == word
		if roman && upper && (unit || (len(word) > 1 && !romanAcronyms[word])) {
			num, numEnd = number{ascii: strconv.Itoa(v), scale: 1}, k
			break
		}
		if f, numEnd, end, ok := readWords(s, i); ok || !roman || !unit {
			return f, numEnd, end, ok
		}
		num, numEnd = number{ascii: strconv.Itoa(v), scale: 1}, k
	default:
		return Figure{}, 0, 0, false
	}
	v := num.value()
	f = Figure{Text: s[i:numEnd], Value: v, Decimals: num.decimals, Unreadable: math.IsNaN(v)}
	if f.Unreadable {
		f.Value = 0
		return f, numEnd, numEnd, true
	}
	end = numEnd
	if u, uend, ok := unitAfter(s, numEnd); ok {
		f.Unit, f.Scales, f.Offset, end = u.unit, u.scales, u.offset, uend
	} else if countNoun(s, numEnd) {
		f.Unit = UnitCount
	}
	return f, numEnd, end, true
}

// scaleAfter reads a scale word after digits ("1.5 million").
func scaleAfter(s string, i int) (float64, int, bool) {
	if i+1 >= len(s) || s[i] != ' ' {
		return 0, i, false
	}
	k := letterRun(s, i+1)
	if k == i+1 || !wordEnds(s, k) {
		return 0, i, false
	}
	mo, ok := lexicon[foldWord(s[i+1:k])]
	if !ok || mo.plural || (mo.kind != mScale && mo.kind != mHundred && mo.kind != mDozen) {
		return 0, i, false
	}
	return float64(mo.value), k, true
}

// readWords reads a number written in words at s[i:], the start of a
// word: words joined by one space or a hyphen, each a number word.
func readWords(s string, i int) (Figure, int, int, bool) {
	type word struct {
		end int
		ms  []morph
	}
	var words []word
	for j := i; len(words) < 24; {
		k := letterRun(s, j)
		if k == j {
			break
		}
		ms := morphsOf(foldWord(s[j:k]))
		if ms == nil {
			break
		}
		words = append(words, word{k, ms})
		if k+1 < len(s) && (s[k] == ' ' || s[k] == '-') && letterRun(s, k+1) > k+1 {
			j = k + 1
			continue
		}
		break
	}
	for nw := len(words); nw > 0; nw-- {
		var ms []morph
		for _, w := range words[:nw] {
			ms = append(ms, w.ms...)
		}
		wn, n := parseMorphs(ms)
		if n != len(ms) {
			continue
		}
		numEnd := words[nw-1].end
		f := Figure{Text: s[i:numEnd]}
		if wn.vague {
			return Figure{Text: f.Text, Unreadable: true}, numEnd, numEnd, true
		}
		u, uend, unit := unitAfter(s, numEnd)
		if len(ms) == 1 && (ms[0].alone || ms[0].kind == mArticle) && !unit {
			return Figure{}, 0, 0, false // "one", "once", "sept": words unless a unit follows
		}
		if len(ms) == 1 && ms[0].before && !timesFactor[nextWord(s, numEnd)] && !articles[nextWord(s, numEnd)] {
			return Figure{}, 0, 0, false // "double" is a factor only before what it multiplies
		}
		f.Value, _ = strconv.ParseFloat(wn.ascii, 64)
		f.Decimals = wn.decimals
		end := numEnd
		switch {
		case wn.unit != UnitNone:
			f.Unit, f.Scales = wn.unit, []float64{1}
		case unit:
			f.Unit, f.Scales, f.Offset, end = u.unit, u.scales, u.offset, uend
		case countNoun(s, numEnd):
			f.Unit = UnitCount
		}
		return f, numEnd, end, true
	}
	return Figure{}, 0, 0, false
}

// articles may follow a factor word ("double le seuil").
var articles = map[string]bool{"le": true, "la": true, "les": true, "el": true, "los": true, "der": true, "die": true, "das": true}

// nextWord is the folded word after one space at s[i:], or "".
func nextWord(s string, i int) string {
	if i >= len(s) || s[i] != ' ' {
		return ""
	}
	return foldWord(s[i+1 : letterRun(s, i+1)])
}

// ReadFigures returns the figures of text in order, as the one figure
// grammar reads them, before any is bound to a quantity. A figure
// glued to a word is a name, as ExtractClaims reads it.
func ReadFigures(text string) []Figure {
	var out []Figure
	for _, t := range tokenize(text) {
		if t.fig != nil {
			out = append(out, *t.fig)
		}
	}
	return out
}

// UnitSpellings are the ways each unit is written after a figure, by
// unit, sorted: words and phrases lower-case, signs as they are.
func UnitSpellings() map[Unit][]string {
	out := map[Unit][]string{}
	add := func(w string, d unitDef) { out[d.unit] = append(out[d.unit], w) }
	for w, d := range unitWords {
		add(w, d)
	}
	for w, d := range unitPhrases {
		add(w, d)
	}
	for w, d := range unitSymbols {
		add(w, d)
	}
	for _, d := range degreeUnits {
		add("°"+strings.ToUpper(d.letter), d.def)
	}
	add("°", celsius)
	add("times", factor)
	for u, ws := range out {
		slices.Sort(ws)
		out[u] = slices.Compact(ws)
	}
	return out
}

// NumberWords are, by language, the number words other than zero to
// ninety-nine: scales, dozens, factors, fractions, the decimal point,
// connectors and the vague words no value is read from. Sorted, folded.
func NumberWords() map[string][]string {
	out := map[string][]string{}
	for lang, words := range numberWords {
		for w, m := range words {
			if m.kind != mNum {
				out[lang] = append(out[lang], w)
			}
		}
		slices.Sort(out[lang])
	}
	return out
}
