// Test-only: the reference client's rich-text reading of texts, for
// shared/platform/bluesky's facet and length tests. Reads a JSON array of
// texts on stdin and prints a JSON array with, for each, what
// @atproto/api's RichText makes of it: the facets detectFacetsWithoutResolution
// finds (a mention's did is still its handle), graphemeLength and length
// (UTF-8 bytes), the two numbers app.bsky.feed.post's text limits count.
import { RichText } from '@atproto/api'

function fail(err) {
  console.error((err && err.stack) || String(err))
  process.exit(70)
}

let input = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk) => (input += chunk))
process.stdin.on('end', () => {
  try {
    const texts = JSON.parse(input)
    const out = texts.map((text) => {
      const rt = new RichText({ text })
      rt.detectFacetsWithoutResolution()
      return { facets: rt.facets ?? [], graphemeLength: rt.graphemeLength, length: rt.length }
    })
    process.stdout.write(JSON.stringify(out))
  } catch (err) {
    fail(err)
  }
})
