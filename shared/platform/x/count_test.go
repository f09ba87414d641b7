package x

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWeightedLength checks X's counting rules
// (https://docs.x.com/fundamentals/counting-characters: URLs 23, emoji 2,
// CJK 2, NFC first) with twitter-text's configuration v3. Cases marked
// "conformance" are from twitter/twitter-text conformance/validate.yml
// (WeightedTweetsWithDiscountedEmojiCounterTest and
// UnicodeDirectionalMarkerCounterTest) at 30e2430, with their expected
// weightedLength.
func TestWeightedLength(t *testing.T) {
	x280 := strings.Repeat("x", 280)
	tests := []struct {
		name string
		text string
		want int
	}{
		{"empty", "", 0},
		{"only white space", " \n\t ", 0},
		{"ascii", "Hello, world!", 13},
		{"exactly 280 ascii", x280, 280},
		{"281 ascii", x280 + "y", 281},
		{"latin-1 and greek weigh 1", "café ΑΒΓ", 8},
		{"decomposed é is NFC-normalised to one", "cafe\u0301", 4},
		{"cjk weighs 2", "日本語", 6},
		{"hangul syllables weigh 2", "한국", 4},
		{"emoji", "👾", 2},
		{"emoji with skin tone", "🙋🏽", 2},
		{"zwj family", "👨\u200d👩\u200d👧\u200d👦", 2},
		{"flag", "🇩🇪", 2},
		{"two flags", "🇩🇪🇫🇷", 4},
		{"heart with vs16", "❤\uFE0F", 2},
		{"keycap", "#\uFE0F\u20E3", 2},
		{"copyright as text", "©", 1},
		{"copyright as emoji", "©\uFE0F", 2},
		{"text presentation is not an emoji", "☺\uFE0E", 4},
		{"general punctuation in the light ranges", "\u2014\u2019\u2032", 3},
		{"ellipsis is outside the light ranges", "\u2026", 2},
		{"url with scheme", "https://example.com/a/very/long/path/that/is/longer/than/23", 23},
		{"short url still 23", "see http://a.co", 27},
		{"bare domain", "example.com", 23},
		{"bare domain in a sentence", "Visit example.com.", 6 + 23 + 1},
		{"not a tld", "notes.txt and main.go", 21},
		{"ccTLD file name counts as a url, as on X", "README.md", 23},
		{"email is not a url", "me@example.com", 14},
		{"hashtag domain is not a url", "#example.com", 12},
		{"two urls", "a https://x.com/1 b https://x.com/2", 2 + 23 + 3 + 23},
		{"280 boundary with url and emoji", strings.Repeat("a", 253) + " https://example.com 🎉", 253 + 1 + 23 + 1 + 2},
		// conformance
		{"conformance: regular tweet with url", "Hi http://test.co", 26},
		{"conformance: just url", "http://test.co", 23},
		{"conformance: long tweet with url in the middle", "285 chars- http://www.twitter.com/jack xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-", 299},
		{"conformance: 282 chars with a normalized character", "282 chars-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxxxxxx-xxxxxA\u0301x", 281},
		{"conformance: 160 CJK", strings.Repeat("故人西辞黄鹤楼，烟花三月下扬州。", 10), 320},
		{"conformance: mix of single and double weight", "H🐱☺👨\u200d👩\u200d👧\u200d👦", 7},
		{"conformance: emoji outside the BMP with skin tones", "🙋🏽👨\u200d🎤", 4},
		{"conformance: general punctuation", "This is a tweet with general punctuation characters: \u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200A\u200B ‐ ‑ ‒ – — ― ‖  ‗ ‘ ’ ‚ ‛ “ ” „ ‟ ′ ″ ‴ ‵ ‶ ‷", 110},
		{"conformance: 140 family emoji", strings.Repeat("👨\u200d👩\u200d👧\u200d👦", 140), 280},
		{"conformance: keycap with a latin leading character", "1\u20E3", 2},
		{"conformance: unicode 10 emoji", "Unicode 10.0 emoji: 🤪; 🧕; 🧕🏾; 🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F", 34},
		{"conformance: 64 character domain without protocol", "randomurlrandomurlrandomurlrandomurlrandomurlrandomurlrandomurls.com", 68},
		{"conformance: directional characters around a url", "\u2066\u202Ahttp://foobar.پاکستان/\u202C\u2069", 31},
		{"conformance: invalid characters", "ABC\u202A\uFFFFABC\uFFFE", 12},
	}
	c := &Client{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WeightedLength(tt.text); got != tt.want {
				t.Errorf("WeightedLength(%q) = %d, want %d", tt.text, got, tt.want)
			}
			if got := c.MeasureText(tt.text); got != tt.want {
				t.Errorf("MeasureText = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestExtractURLs replays cases of twitter/twitter-text
// conformance/extract.yml (urls, urls_with_indices, tco_urls_with_params)
// at 30e2430: which parts of a text X takes for URLs (and weighs 23).
func TestExtractURLs(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"http://example.com", []string{"http://example.com"}},
		{"http://ああ.com", []string{"http://ああ.com"}},
		{"text http://google.com/#search?q=iphone%20-filter%3Alinks", []string{"http://google.com/#search?q=iphone%20-filter%3Alinks"}},
		{"text http://somehost.com:3000", []string{"http://somehost.com:3000"}},
		{"text http://xo.com/~matthew+%ff-,.;x", []string{"http://xo.com/~matthew+%ff-,.;x"}},
		{"text http://en.wikipedia.org/wiki/Primer_(film)", []string{"http://en.wikipedia.org/wiki/Primer_(film)"}},
		{"text http://✪df.ws/ejp", []string{"http://✪df.ws/ejp"}},
		{"test http://example.comだよね.comtest/hogehoge", []string{"http://example.com"}},
		{"text http://chilp.it/?77e8fd", []string{"http://chilp.it/?77e8fd"}},
		{"text http://msdn.microsoft.com/ja-jp/library/system.net.httpwebrequest(v=VS.100).aspx", []string{"http://msdn.microsoft.com/ja-jp/library/system.net.httpwebrequest(v=VS.100).aspx"}},
		{"text http://no-tld", nil},
		{"text http://tld-too-short.x", nil},
		{"(http://twitter.com", []string{"http://twitter.com"}},
		{"text http://domain.com-that-you-should-have-put-a-space-after", nil},
		{"text http://foo.com?#foo text", []string{"http://foo.com?#foo"}},
		{"foo.com foo.net foo.org foo.edu foo.gov", []string{"foo.com", "foo.net", "foo.org", "foo.edu", "foo.gov"}},
		{"foo.baz foo.co.jp www.xxxxxxx.baz www.foo.co.uk wwwww.xxxxxxx foo.comm foo.somecom foo.govedu foo.jp", []string{"foo.co.jp", "www.foo.co.uk", "foo.jp"}},
		{"t.co/abcde bit.ly/abcde", []string{"t.co/abcde", "bit.ly/abcde"}},
		{"Go to http://example.com/view/slug-url-?foo=bar", []string{"http://example.com/view/slug-url-?foo=bar"}},
		{"Go to https://en.m.wikipedia.org/wiki/Hatfield–McCoy_feud please", []string{"https://en.m.wikipedia.org/wiki/Hatfield–McCoy_feud"}},
		{"@user Try http:// example.com/path", []string{"example.com/path"}},
		{"これは日本語です。example.com/path/index.html中国語example.com/path한국", []string{"example.com/path/index.html", "example.com/path"}},
		{"Go to http://twitter.com/Русские_слова", []string{"http://twitter.com/Русские_слова"}},
		{"Hello http://xn--はじめよう.com/index.html", nil},
		{"text http://domain-dash_2314352345_dfasd.foo-cow_4352.com", nil},
		{"Email me at name.al-lastname@foo.com or name.al+lastname@foo.com", nil},
		{"MLB.tv vine.co twitch.tv t.co", []string{"MLB.tv", "vine.co", "twitch.tv", "t.co"}},
		{"test http://a_b.c-d.com", []string{"http://a_b.c-d.com"}},
		{"test http://-leadingdash.twitter.com", nil},
		{"test http://twitter_underscore.com", nil},
		{"test ELPAÍS.com", []string{"ELPAÍS.com"}},
		{"test http://twitter.com/.", []string{"http://twitter.com/"}},
		{"Test a ton of periods http://example.com/path..........................................", []string{"http://example.com/path"}},
		{"#test.com @test.com #http://test.com @http://test.com #t.co/abcde @t.co/abcde", nil},
		{"I really like http://t.co/pbY2NfTZ's website", []string{"http://t.co/pbY2NfTZ"}},
		{"I really like http://t.co/abcdefghijklmnopqrstuvwxyz012345678901234", nil},
		{"example.comてすとですtwitter.みんなです", []string{"example.com", "twitter.みんな"}},
		{"$http://twitter.com $twitter.com $http://t.co/abcde $t.co/abcde $t.co $TVI.CA $RBS.CA", nil},
		{"long.test.tar.bz2 test.tar.bz2 tar.bz2", nil},
		{"john.doe.gov@mail.com", nil},
		{"text https://t.co/sadfasdf?a=b&c=d", []string{"https://t.co/sadfasdf?a=b&c=d"}},
		{"text https://t.co/asdfdf?a=b#123", []string{"https://t.co/asdfdf?a=b#123"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			var got []string
			for _, sp := range extractURLs(tt.text) {
				got = append(got, tt.text[sp.start:sp.end])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("URLs (-want +got):\n%s", diff)
			}
		})
	}
}
