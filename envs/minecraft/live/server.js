// Launcher: a flying-squid Minecraft 1.21.4 server on 127.0.0.1 with the workcell plugin.
//
//   node server.js <port>
// Control channel (channel.js, two inherited pipes): {"event":"ready","port":N} once listening, then one
// reply {"id":..,"ok":..,"result"|"error":..} per request {"id":..,"op":"reset|state|recipes|blocks|ping"}.
// flying-squid's own console and logs stay on stdin/stdout. EOF on the request pipe ends the process.
const { serve } = require('./channel')
const mcServer = require('flying-squid')

const port = parseInt(process.argv[2], 10)
if (!(port > 0)) { process.stderr.write('usage: node server.js <port>\n'); process.exit(2) }

const serv = mcServer.createMCServer({
  host: '127.0.0.1', // loopback only
  port,
  'online-mode': false,
  logging: false,
  gameMode: 1, // creative: digs complete at once; all item accounting is server-side below
  difficulty: 0,
  worldFolder: undefined, // in-memory world: nothing persists between runs
  generation: { name: 'superflat', options: { worldHeight: 80 } },
  kickTimeout: 30000,
  plugins: {},
  modpe: false,
  'view-distance': 3,
  'player-list-text': { header: { text: 'accord' }, footer: { text: 'workcell' } },
  'everybody-op': true,
  'max-entities': 100,
  'max-players': 8,
  version: '1.21.4'
})
serv.addPlugin('workcell', require('./workcell'), {})
serv.on('error', (e) => { process.stderr.write(`server error: ${e.stack || e}\n`); process.exit(1) })

const send = serve({
  ping: async () => ({ players: serv.players.map(p => p.username) }),
  reset: (req) => serv.workcellControl.reset(req.layout),
  place: (req) => serv.workcellControl.place(req.agents),
  state: async () => serv.workcellControl.state(),
  recipes: async (req) => serv.workcellControl.recipes(req.items),
  blocks: (req) => serv.workcellControl.blocks(req.positions)
})
serv.once('ready', () => send({ event: 'ready', port }))
