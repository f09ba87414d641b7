// Launcher of the Bluesky reference PDS for shared/localpds (tests, the drill): an
// in-memory PLC directory and a PDS in this one Node process, both on
// 127.0.0.1, configured entirely from the environment the Go side sets
// (PDS_PORT, PLC_PORT, the PDS_* secrets and folders). Prints
// "oncepost-pds-listening pds=URL plc=URL" once both answer, and exits
// when stdin closes (the Go process holding the other end is gone) or
// on SIGTERM.
import { createRequire } from 'node:module'
import fs from 'node:fs'

const require = createRequire(import.meta.url)

// Both servers call app.listen(port), which binds every interface; tests
// bind loopback only.
function loopbackOnly(app) {
  const listen = app.listen.bind(app)
  app.listen = (port, ...rest) => listen(port, '127.0.0.1', ...rest)
}

function fail(err) {
  console.error((err && err.stack) || String(err))
  process.exit(70)
}

async function main() {
  const plcPort = Number(process.env.PLC_PORT)
  if (!plcPort) throw new Error('PLC_PORT is not set')
  const { PlcServer, Database } = require('@did-plc/server')
  const plc = PlcServer.create({ db: Database.mock(), port: plcPort })
  loopbackOnly(plc.app)
  await plc.start()
  // The PDS fetches DID documents through a guard that refuses IP
  // addresses as hosts: the directory must be named by a host name.
  process.env.PDS_DID_PLC_URL = `http://localhost:${plcPort}`

  const { PDS, envToCfg, envToSecrets, readEnv } = await import('@atproto/pds')
  const env = readEnv()
  for (const dir of [env.dataDirectory, env.blobstoreDiskLocation]) {
    if (dir) fs.mkdirSync(dir, { recursive: true })
  }
  const pds = await PDS.create(envToCfg(env), envToSecrets(env))
  loopbackOnly(pds.app)
  await pds.start()

  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    await pds.destroy().catch((e) => console.error('stop pds:', e))
    await plc.destroy().catch((e) => console.error('stop plc:', e))
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  process.stdin.on('end', stop)
  process.stdin.on('close', stop)
  process.stdin.resume()

  console.log(`oncepost-pds-listening pds=http://127.0.0.1:${env.port} plc=${process.env.PDS_DID_PLC_URL}`)
}

main().catch(fail)
