// The reference verifier as the tests' oracle: reads a JSON list of
// {"secret", "headers", "body"} from stdin, checks each with the npm
// standardwebhooks library (its node_modules directory is the first
// argument) and prints a JSON list: "verified", or the library's error.
"use strict";
const path = require("path");
const { Webhook } = require(path.join(process.argv[2], "standardwebhooks"));

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(({ secret, headers, body }) => {
    try {
      new Webhook(secret).verify(Buffer.from(body, "utf8"), headers);
      return "verified";
    } catch (e) {
      return `${e.name}: ${e.message}`;
    }
  });
  process.stdout.write(JSON.stringify(out) + "\n");
});
