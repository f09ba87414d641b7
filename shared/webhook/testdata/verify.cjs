// The reference verifier as the tests' oracle: reads {"secret", "headers",
// "body"} as JSON from stdin and checks them with the npm
// standardwebhooks library (its directory of node_modules is the first
// argument). Exits 0 when the signature verifies, 1 (with the library's
// message on stderr) when it does not.
"use strict";
const path = require("path");
const { Webhook } = require(path.join(process.argv[2], "standardwebhooks"));

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const { secret, headers, body } = JSON.parse(input);
  try {
    new Webhook(secret).verify(Buffer.from(body, "utf8"), headers);
  } catch (e) {
    process.stderr.write(`${e.name}: ${e.message}\n`);
    process.exit(1);
  }
  process.stdout.write("verified\n");
});
