// JSON-lines control channel on two inherited pipes: requests in on fd $ACCORD_FD_IN, replies out
// on fd $ACCORD_FD_OUT.
//
// flying-squid runs a console on stdin/stdout, so the Python bridge talks to the Node processes
// on two extra pipes instead. EOF on the request pipe means the parent is gone: the process exits.
const fs = require('fs')
const readline = require('readline')

function serve (handlers, onClose) {
  const fdIn = parseInt(process.env.ACCORD_FD_IN, 10)
  const fdOut = parseInt(process.env.ACCORD_FD_OUT, 10)
  if (!(fdIn > 2 && fdOut > 2)) throw new Error('ACCORD_FD_IN / ACCORD_FD_OUT must name the control pipes')
  const send = (obj) => fs.writeSync(fdOut, JSON.stringify(obj) + '\n')
  const rl = readline.createInterface({ input: fs.createReadStream(null, { fd: fdIn }) })
  rl.on('line', async (line) => {
    let req
    try { req = JSON.parse(line) } catch (e) { return send({ id: null, ok: false, error: 'bad json' }) }
    const h = handlers[req.op]
    try {
      if (!h) throw new Error(`unknown op ${req.op}`)
      send({ id: req.id, ok: true, result: await h(req) })
    } catch (e) {
      send({ id: req.id, ok: false, error: e.message || String(e) })
    }
  })
  rl.on('close', () => { (onClose || (() => process.exit(0)))() })
  return send
}

module.exports = { serve }
