// Mineflayer bot driver: one process, one bot per workcell agent, on 127.0.0.1.
//
//   node bots.js <port> <speed>      (speed: multiple of vanilla movement speed, 1 = vanilla)
// Control channel (channel.js, two inherited pipes), one request at a time per agent:
//   connect {agents, hold_ms?}  log every agent in and wait for it to spawn (hold_ms: tests)
//   sync {agent, pos}           wait until the bot has taken a server teleport to pos=[x,z]
//   act {agent, action, target} run one simulator action (see ACTIONS)
//   quit {}                     disconnect every bot
// Movement, digging and placing are real client calls: mineflayer-pathfinder walks the bot with
// Mineflayer's physics (position packets), `bot.dig` sends dig packets, `bot.equip` window clicks
// and `bot.placeBlock` block_place packets. Handoff, crafting, chests and furnaces are `/wc`
// commands the workcell plugin runs; it also checks every dig and place against the simulator's rules.
const mineflayer = require('mineflayer')
const { pathfinder, Movements, goals } = require('mineflayer-pathfinder')
const { Vec3 } = require('vec3')
const { serve } = require('./channel')

const port = parseInt(process.argv[2], 10)
const speed = parseFloat(process.argv[3] || '1.0')
const GROUND_Y = 5 // first air layer of the superflat world (workcell.js)
const SPAWN_TIMEOUT_MS = 20000
const REPLY_TIMEOUT_MS = 10000
const MAX_TICKS = 2400 // bound on any single movement or wait (2 minutes of game time)
const bots = {}
let seq = 0

function timeout (ms, what) {
  let timer
  const p = new Promise((resolve, reject) => { timer = setTimeout(() => reject(new Error(`timeout: ${what}`)), ms) })
  p.clear = () => clearTimeout(timer)
  return p
}

// Tests: hold the bot's flying and look packets back until `ms` after it spawns, as a starved bot
// process sends them late. flying-squid ends a login only once the first of them is in.
function holdIdlePackets (bot, ms) {
  const write = bot._client.write.bind(bot._client)
  const held = []
  bot._client.write = (name, params) => ['flying', 'look'].includes(name) ? held.push([name, params]) : write(name, params)
  const release = () => { bot._client.write = write; for (const [name, params] of held) write(name, params) }
  bot.once('spawn', () => setTimeout(release, ms))
}

async function login (name, holdMs = 0) {
  const bot = mineflayer.createBot({ host: '127.0.0.1', port, username: name, version: '1.21.4', auth: 'offline', hideErrors: true })
  if (holdMs > 0) holdIdlePackets(bot, holdMs)
  bot.pending = new Map()
  bot.on('messagestr', (msg) => {
    if (!msg.startsWith('WC#')) return
    const reply = JSON.parse(msg.slice(3))
    const waiter = bot.pending.get(reply.seq)
    if (waiter) { bot.pending.delete(reply.seq); waiter(reply) }
  })
  bot.loadPlugin(pathfinder)
  bot.once('spawn', () => {
    // Walk only: no digging through, no scaffolding, no pillaring; the workcell is flat ground.
    const moves = new Movements(bot)
    Object.assign(moves, { canDig: false, allow1by1towers: false, allowParkour: false, canOpenDoors: false, scafoldingBlocks: [] })
    bot.pathfinder.setMovements(moves)
    // Faster-than-vanilla walking for long suites: prismarine-physics' base speed (0.1 = vanilla).
    bot.physics.playerSpeed *= speed
  })
  bot.on('end', () => { bot.ended = true })
  bot.on('error', () => {})
  const t = timeout(SPAWN_TIMEOUT_MS, `${name} spawn`)
  try {
    await Promise.race([new Promise((resolve, reject) => {
      bot.once('spawn', resolve)
      bot.once('end', (why) => reject(new Error(`${name} disconnected before spawn: ${why}`)))
    }), t])
  } finally { t.clear() }
  bots[name] = bot
  return bot
}

async function botFor (name, holdMs = 0) {
  const bot = bots[name]
  if (bot && !bot.ended) return bot
  let last // reconnect a dropped bot, a bounded number of times
  for (let i = 0; i < 3; i++) {
    try { return await login(name, holdMs) } catch (e) { last = e }
  }
  throw last
}

async function command (bot, op, args) {
  const s = ++seq
  const t = timeout(REPLY_TIMEOUT_MS, `/wc ${op}`)
  try {
    const reply = await Promise.race([new Promise((resolve) => {
      bot.pending.set(s, resolve)
      const at = [bot.entity.position.x, bot.entity.position.z]
      bot.chat(`/wc ${op} ${JSON.stringify({ ...args, seq: s, at })}`)
    }), t])
    if (!reply.ok) throw Object.assign(new Error(reply.error), { refused: reply.refused })
    return reply.result
  } finally { t.clear(); bot.pending.delete(s) }
}

function walk (bot, goal) {
  // Not pathfinder.goto(): it also resolves on an empty partial path (A* out of time on a busy
  // machine) while the bot walks on. Only goal_reached counts; no path or a timed-out search fails.
  return new Promise((resolve, reject) => {
    const done = (err) => {
      bot.removeListener('goal_reached', reached)
      bot.removeListener('path_update', update)
      if (err) reject(err); else resolve()
    }
    const reached = () => done()
    const update = (r) => { if (r.status === 'noPath' || r.status === 'timeout') done(new Error(`${bot.username}: ${r.status} to ${goal.x}, ${goal.z}`)) }
    bot.on('goal_reached', reached)
    bot.on('path_update', update)
    bot.pathfinder.setGoal(goal)
  })
}

async function moveTo (bot, x, z) { // pathfinder to the cell holding (x, z)
  const goal = new goals.GoalBlock(Math.floor(x), GROUND_Y, Math.floor(z))
  const t = timeout(MAX_TICKS * 50, `${bot.username} walking to ${x}, ${z}`)
  try {
    await Promise.race([walk(bot, goal), t])
  } finally {
    t.clear()
    bot.pathfinder.setGoal(null) // drops any search still running, releases the movement keys
  }
  await bot.waitForTicks(2) // the last position packet precedes any later command
  const at = bot.entity.position.floored()
  if (!goal.isEnd(at)) throw new Error(`${bot.username} stopped at ${at}, not in ${goal.x}, ${goal.y}, ${goal.z}`)
}

async function walkStraight (bot, x, z, ticks) { // tests: movement keys toward (x, z), no planning
  for (let i = 0; i < ticks && Math.hypot(x - bot.entity.position.x, z - bot.entity.position.z) > 0.3; i++) {
    await bot.lookAt(new Vec3(x, bot.entity.position.y + 1.6, z), true)
    bot.setControlState('forward', true)
    await bot.waitForTicks(1)
  }
  bot.clearControlStates()
  await bot.waitForTicks(10)
  const p = bot.entity.position
  return [p.x, p.z]
}

async function place (bot, a) {
  const { cells } = await command(bot, 'can_place', { site: a.site, component: a.component, item: a.item, count: a.count })
  const up = new Vec3(0, 1, 0)
  for (const [x, y, z] of cells) { // each block goes on top of the ground or the block below it
    if (!bot.heldItem || bot.heldItem.name !== a.item) {
      const stack = bot.inventory.items().find(it => it.name === a.item)
      if (!stack) throw new Error(`${bot.username} holds no ${a.item} to place`)
      await bot.equip(stack, 'hand')
    }
    await bot.placeBlock(bot.blockAt(new Vec3(x, y - 1, z)), up)
  }
  if (cells.length) await command(bot, 'placed', {})
}

async function mine (bot, a) {
  const { pos, credits } = await command(bot, 'can_mine', { source: a.source, count: a.count })
  const at = new Vec3(pos[0], pos[1], pos[2])
  for (let k = 0; k < a.count; k++) {
    let block = bot.blockAt(at)
    for (let w = 0; w < 100 && (!block || block.name === 'air'); w++) { // the server re-sends it
      await bot.waitForTicks(1)
      block = bot.blockAt(at)
    }
    if (!block || block.name === 'air') throw new Error(`source block at ${at} was not re-sent`)
    await bot.dig(block, 'ignore') // resolves once the client has removed the block locally
  }
  await command(bot, 'mined', { credits: credits + a.count })
}

const ACTIONS = {
  Navigate: (bot, a, target) => moveTo(bot, target[0], target[1]),
  NavigateToAgent: (bot, a, target) => moveTo(bot, target[0], target[1]),
  Mine: (bot, a) => mine(bot, a),
  Craft: (bot, a) => command(bot, 'craft', { item: a.item, times: a.times }),
  Toss: (bot, a) => command(bot, 'toss', { item: a.item, count: a.count }),
  PickUp: (bot) => command(bot, 'pick_up', {}),
  OpenChest: (bot, a) => command(bot, 'open_chest', { chest: a.chest }),
  Deposit: (bot, a) => command(bot, 'deposit', { chest: a.chest, item: a.item, count: a.count }),
  Withdraw: (bot, a) => command(bot, 'withdraw', { chest: a.chest, item: a.item, count: a.count }),
  Place: (bot, a) => place(bot, a),
  FurnaceLoad: (bot, a) => command(bot, 'furnace_load', { furnace: a.furnace, slot: a.slot, item: a.item, count: a.count }),
  FurnaceCollect: (bot, a) => command(bot, 'furnace_collect', { furnace: a.furnace, count: a.count }),
  Wait: (bot, a) => bot.waitForTicks(Math.max(0, Math.min(a.ticks, MAX_TICKS)))
}

serve({
  async connect (req) {
    for (const name of req.agents) await botFor(name, req.hold_ms || 0)
    return { agents: Object.keys(bots), modes: Object.values(bots).map(b => b.game.gameMode) }
  },
  async sync (req) {
    const bot = await botFor(req.agent)
    for (let i = 0; i < 200; i++) {
      const p = bot.entity.position
      if (Math.hypot(p.x - req.pos[0], p.z - req.pos[1]) < 0.5) {
        // re-send where the bot stands: a packet sent before the teleport may have landed after it
        bot.entity.position = new Vec3(req.pos[0], p.y, req.pos[1] + 0.001)
        await bot.waitForTicks(2)
        return { ok: true }
      }
      await bot.waitForTicks(1)
    }
    const p = bot.entity.position
    throw new Error(`${req.agent} did not take the teleport to ${req.pos} (stands at ${p.x}, ${p.y}, ${p.z})`)
  },
  async act (req) {
    const bot = await botFor(req.agent)
    const run = ACTIONS[req.action.type]
    if (!run) throw new Error(`unknown action ${req.action.type}`)
    try {
      return { result: (await run(bot, req.action, req.target)) || null }
    } catch (e) {
      if (e.refused) return { refused: e.message } // the world said no: an ActionError in Python
      throw e
    }
  },
  async drop (req) { // tests: cut a bot's connection to exercise reconnect
    const bot = bots[req.agent]
    if (bot) { bot.end('test drop'); bot.ended = true }
    return {}
  },
  async straight (req) { // tests: does a straight walk get through?
    return { pos: await walkStraight(await botFor(req.agent), req.target[0], req.target[1], req.ticks) }
  },
  async quit () {
    for (const bot of Object.values(bots)) bot.end('quit')
    setTimeout(() => process.exit(0), 100)
    return {}
  }
}, () => process.exit(0))
