// Workcell plugin for flying-squid: the server-side half of the live GenCoord backend.
//
// Stock flying-squid 1.12 cannot run crafting windows, chest windows or item tosses on 1.21.x,
// so those operations run here, against the server's own player inventories, driven by bot
// chat commands `/wc <op> <json>`. Digging source blocks is a real client dig: the plugin
// credits the drop into the digger's inventory and restores the source block. Site building is
// real client placing: the plugin checks the request, hands the bot the footprint cells, lets
// flying-squid's own block_place handler set each block and takes the item from the placer's
// server-side inventory. Every refusal mirrors the Python simulator (envs/minecraft/world.py):
// reach, tools, stations, modes.
const Vec3 = require('vec3').Vec3

const REACH = 4.5 // survival block-interaction reach (blocks), as in the simulator
const PICKUP_RANGE = 2.0
const GROUND_Y = 5 // first air layer above flying-squid's superflat ground
const BLOCK_DROPS = { oak_log: ['oak_log', null], stone: ['cobblestone', 'pickaxe'], sand: ['sand', null] }
const PICKAXES = ['wooden_pickaxe', 'stone_pickaxe', 'iron_pickaxe']
const SMELTING = { cobblestone: 'stone', oak_log: 'charcoal', sand: 'glass' }
const FUEL_VALUE = { coal: 8.0, charcoal: 8.0, oak_log: 1.5, oak_planks: 1.5, stick: 0.5 }
const RAW = new Set(['oak_log', 'oak_planks', 'cobblestone', 'sand', 'coal'])
const FINISHED = new Set(['crafting_table', 'stick', 'chest', 'furnace', 'stone', 'glass', 'charcoal', 'wooden_pickaxe'])
const MOVES = ['flying', 'look', 'position', 'position_look'] // client movement packets
const LOGIN_MS = 20000 // bound on the end of a login a teleport waits for

class Refused extends Error {} // the world says no: an ActionError in Python
class Fault extends Error {} // the backend went wrong: a BackendFailure in Python

async function until (test, ms) { // bounded poll
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (test()) return true
    await new Promise(resolve => setTimeout(resolve, 5))
  }
  return test()
}

async function within (promise, ms) { // true once `promise` resolves, false if `ms` pass first
  let timer
  const late = new Promise(resolve => { timer = setTimeout(resolve, ms, false) })
  try { return await Promise.race([Promise.resolve(promise).then(() => true), late]) } finally { clearTimeout(timer) }
}

function accepts (mode, item) {
  if (mode === 'RAW_PROCESSOR') return RAW.has(item)
  if (mode === 'FINISHED_RECEIVER') return FINISHED.has(item)
  return true
}

module.exports.server = function (serv) {
  const reg = serv.registry
  const Item = require('prismarine-item')(reg)
  const cell = { locations: {}, modes: {}, chests: {}, ground: [], built: [], furnaces: {}, openChest: {}, placed: [], credits: 0, digs: {}, placing: {} }
  serv.workcell = cell

  // ------------------------------------------------------------ inventories (authoritative)
  function count (player, name) {
    let n = 0
    for (const it of player.inventory.slots) if (it && it.name === name) n += it.count
    return n
  }
  function inventory (player) {
    const out = {}
    for (let s = 9; s < 45; s++) {
      const it = player.inventory.slots[s]
      if (it) out[it.name] = (out[it.name] || 0) + it.count
    }
    return out
  }
  function take (player, name, n) {
    const have = count(player, name)
    if (n <= 0 || have < n) throw new Refused(`${player.username} has ${have} ${name}, needs ${n}`)
    for (let s = 44; s >= 9 && n > 0; s--) {
      const it = player.inventory.slots[s]
      if (!it || it.name !== name) continue
      const k = Math.min(n, it.count)
      n -= k
      player.inventory.updateSlot(s, it.count === k ? null : new Item(it.type, it.count - k))
    }
  }
  function give (player, name, n) {
    const info = reg.itemsByName[name]
    if (!info) throw new Refused(`unknown item ${name}`)
    const stack = info.stackSize || 64
    for (let s = 9; s < 45 && n > 0; s++) { // top up existing stacks, then empty slots
      const it = player.inventory.slots[s]
      if (it && it.name === name && it.count < stack) {
        const k = Math.min(n, stack - it.count)
        player.inventory.updateSlot(s, new Item(info.id, it.count + k))
        n -= k
      }
    }
    for (let s = 9; s < 45 && n > 0; s++) {
      if (player.inventory.slots[s]) continue
      const k = Math.min(n, stack)
      player.inventory.updateSlot(s, new Item(info.id, k))
      n -= k
    }
    if (n > 0) throw new Refused(`${player.username}'s inventory is full`)
  }
  function setInventory (player, items) {
    for (let s = 0; s < 46; s++) if (player.inventory.slots[s]) player.inventory.updateSlot(s, null)
    for (const [name, n] of Object.entries(items)) give(player, name, n)
  }

  // ------------------------------------------------------------ geometry
  const blockPos = (loc) => new Vec3(loc.pos[0], GROUND_Y, loc.pos[1])
  function location (name, kind) {
    const loc = cell.locations[name]
    if (!loc || (kind && loc.kind !== kind)) throw new Refused(`no ${kind || 'location'} named ${JSON.stringify(name)}`)
    return loc
  }
  function inReach (player, loc) {
    return Math.hypot(player.position.x - loc.pos[0], player.position.z - loc.pos[1]) <= REACH
  }
  function stateOf (name) {
    const b = reg.blocksByName[name]
    return b ? b.defaultState : 0
  }
  async function setBlock (pos, name) {
    await serv.setBlock(serv.overworld, pos, stateOf(name))
  }
  function player (name) {
    const p = serv.players.find(q => q.username === name)
    if (!p) throw new Refused(`agent ${name} is not connected`)
    return p
  }
  async function loggedIn (name) { // a connected player whose login has ended (see newPlayer)
    const p = player(name)
    if (!await within(p.loggedIn, LOGIN_MS)) throw new Fault(`${name}'s login did not end in ${LOGIN_MS} ms`)
    return p
  }

  // ------------------------------------------------------------ recipes (minecraft-data 1.21.4)
  function recipeVariants (itemName) {
    const info = reg.itemsByName[itemName]
    const out = []
    for (const r of (info && reg.recipes[info.id]) || []) {
      const need = {}
      let rows = 1; let cols = 1
      if (r.inShape) {
        rows = r.inShape.length
        cols = Math.max(...r.inShape.map(row => row.length))
        for (const row of r.inShape) for (const id of row) if (id !== null && id !== undefined) need[id] = (need[id] || 0) + 1
      } else {
        for (const id of r.ingredients) need[id] = (need[id] || 0) + 1
        rows = cols = r.ingredients.length <= 4 ? 2 : 3
      }
      const inputs = Object.entries(need).map(([id, n]) => [reg.items[id].name, n])
      out.push({ count: r.result.count, inputs, grid: Math.max(rows, cols) <= 2 ? 2 : 3 })
    }
    return out
  }
  serv.workcellRecipes = recipeVariants

  // ------------------------------------------------------------ operations (bot-driven)
  const ops = {
    can_mine (p, a) { // checked before the client digs, like the simulator's Mine preconditions
      const loc = location(a.source, 'source')
      if (!inReach(p, loc)) throw new Refused(`${p.username} is not within reach of ${a.source}`)
      const [, tool] = BLOCK_DROPS[loc.block]
      if (tool === 'pickaxe' && !PICKAXES.some(t => count(p, t) > 0)) throw new Refused(`${p.username} needs a pickaxe to mine ${loc.block}`)
      if (!(a.count > 0)) throw new Refused('mine count must be positive')
      return { pos: [loc.pos[0], GROUND_Y, loc.pos[1]], credits: cell.digs[p.username] || 0 }
    },
    async mined (p, a) { // flying-squid handles dig packets asynchronously: wait for the credits
      const ok = await until(() => (cell.digs[p.username] || 0) >= a.credits, 3000)
      if (!ok) throw new Refused(`${p.username}'s digs were not all credited`)
      return { credits: cell.digs[p.username] }
    },
    craft (p, a) {
      if (cell.modes[p.username] === 'FINISHED_RECEIVER') throw new Refused(`${p.username}'s workcell cannot transform material`)
      const variants = recipeVariants(a.item)
      if (!variants.length || !(a.times > 0)) throw new Refused(`cannot craft ${a.times} x ${a.item}`)
      const r = variants.find(v => v.inputs.every(([name, n]) => count(p, name) >= n * a.times))
      if (!r) throw new Refused(`${p.username} lacks the inputs to craft ${a.item}`)
      if (r.grid === 3 && !Object.values(cell.locations).some(l => l.kind === 'station' && l.block === 'crafting_table' && inReach(p, l))) {
        throw new Refused(`${a.item} needs a crafting table within reach of ${p.username}`)
      }
      for (const [name, n] of r.inputs) take(p, name, n * a.times)
      give(p, a.item, r.count * a.times)
      return { made: r.count * a.times }
    },
    toss (p, a) { // handoff, giver half: the stack lies where the giver stands
      take(p, a.item, a.count)
      cell.ground.push({ pos: [p.position.x, p.position.z], item: a.item, count: a.count })
      return {}
    },
    pick_up (p) { // handoff, taker half: stacks within pickup range that this workcell accepts
      const kept = []; const got = {}
      for (const s of cell.ground) {
        const near = Math.hypot(p.position.x - s.pos[0], p.position.z - s.pos[1]) <= PICKUP_RANGE
        if (near && accepts(cell.modes[p.username], s.item)) {
          give(p, s.item, s.count)
          got[s.item] = (got[s.item] || 0) + s.count
        } else kept.push(s)
      }
      cell.ground = kept
      return { got }
    },
    open_chest (p, a) {
      const loc = location(a.chest, 'chest')
      if (!inReach(p, loc)) throw new Refused(`${p.username} is not within reach of ${a.chest}`)
      cell.openChest[p.username] = a.chest
      return {}
    },
    deposit (p, a) {
      if (cell.openChest[p.username] !== a.chest) throw new Refused(`${p.username} has not opened ${a.chest}`)
      take(p, a.item, a.count)
      const box = cell.chests[a.chest]
      box[a.item] = (box[a.item] || 0) + a.count
      return {}
    },
    withdraw (p, a) {
      if (cell.openChest[p.username] !== a.chest) throw new Refused(`${p.username} has not opened ${a.chest}`)
      const box = cell.chests[a.chest]
      if (!(a.count > 0) || (box[a.item] || 0) < a.count) throw new Refused(`${a.chest} holds ${box[a.item] || 0} ${a.item}`)
      box[a.item] -= a.count
      if (!box[a.item]) delete box[a.item]
      give(p, a.item, a.count)
      return {}
    },
    can_place (p, a) { // site building: blocks go up on a 3x3 footprint centred on the site
      const loc = location(a.site)
      if (loc.kind !== 'site' && loc.kind !== 'marker') throw new Refused(`${a.site} is not a build site`)
      if (!inReach(p, loc)) throw new Refused(`${p.username} is not within reach of ${a.site}`)
      const have = count(p, a.item)
      if (!(a.count > 0) || have < a.count) throw new Refused(`${p.username} has ${have} ${a.item}, needs ${a.count}`)
      const done = [a.site, a.component, a.item, a.count, p.username]
      if (!reg.blocksByName[a.item]) { // an item with no block form is delivered, as in the simulator
        take(p, a.item, a.count)
        cell.built.push(done)
        return { cells: [] }
      }
      const already = cell.built.filter(b => b[0] === a.site).reduce((s, b) => s + b[3], 0)
      const cells = []
      for (let i = already; i < already + a.count; i++) cells.push(footprint(loc, i))
      cell.placing[p.username] = { item: a.item, cells, n: 0, done }
      return { cells: cells.map(c => [c.x, c.y, c.z]) }
    },
    async placed (p) { // the client has seen every block go up; the server's world must agree
      const job = cell.placing[p.username]
      if (!job) throw new Fault(`${p.username} has no placing under way`)
      const all = await until(() => job.n === job.cells.length, 3000) // block_place is handled asynchronously
      delete cell.placing[p.username]
      if (!all) throw new Fault(`${p.username} placed ${job.n} of ${job.cells.length} ${job.item}`)
      for (const c of job.cells) {
        const b = await serv.overworld.getBlock(c)
        if (b.name !== job.item) throw new Fault(`the server has ${b.name} at ${c}, not ${job.item}`)
      }
      cell.built.push(job.done)
      return { placed: job.n }
    },
    furnace_load (p, a) {
      const f = furnace(p, a.furnace)
      if (a.slot === 'input' && !(a.item in SMELTING)) throw new Refused(`${a.item} cannot be smelted`)
      if (a.slot === 'fuel' && !(a.item in FUEL_VALUE)) throw new Refused(`${a.item} is not a fuel`)
      const slot = a.slot === 'input' ? f.input : f.fuel
      if (slot[1] && slot[0] !== a.item) throw new Refused(`furnace ${a.slot} slot holds ${slot[0]}`)
      take(p, a.item, a.count)
      slot[0] = a.item; slot[1] += a.count
      smelt(f)
      return {}
    },
    furnace_collect (p, a) {
      const f = furnace(p, a.furnace)
      const [item, have] = f.output
      if (have < a.count || !(a.count > 0)) throw new Refused(`furnace ${a.furnace} holds ${have} output, ${a.count} requested`)
      f.output[1] -= a.count
      give(p, item, a.count)
      return {}
    }
  }
  function footprint (loc, i) { // the i-th block of a site: rows of 3, layers of 9
    return new Vec3(loc.pos[0] + (i % 3) - 1, GROUND_Y + Math.floor(i / 9), loc.pos[1] + (Math.floor(i / 3) % 3) - 1)
  }
  // flying-squid's block_place handler asks serv.placeItem which block an item makes. Only the
  // next footprint cell of the placer's `can_place` job may be set, with the job's item, and the
  // item leaves the held slot: stock flying-squid consumes nothing in creative mode, which the
  // bots play in only so that digs complete at once.
  const stockPlaceItem = serv.placeItem
  serv.placeItem = (data) => {
    const job = cell.placing[data.player.username]
    const want = job && job.cells[job.n]
    if (!want || data.item.name !== job.item || !data.placedPosition.equals(want)) return {} // nothing is placed
    const made = stockPlaceItem(data)
    if (!reg.blocks[made.id]) return made
    if (data.player.gameMode !== 0) { // survival: flying-squid takes the item itself
      const slot = 36 + data.player.heldItemSlot
      const held = data.player.inventory.slots[slot]
      data.player.inventory.updateSlot(slot, held.count > 1 ? new Item(held.type, held.count - 1) : null)
    }
    job.n++
    cell.placed.push(want)
    return made
  }

  function furnace (p, name) {
    const loc = location(name, 'station')
    if (!cell.furnaces[name] || !inReach(p, loc)) throw new Refused(`no furnace ${JSON.stringify(name)} within reach`)
    return cell.furnaces[name]
  }
  function smelt (f) { // smelting runs to completion between actions, as in the simulator
    for (let guard = 0; f.input[1] > 0 && guard < 10000; guard++) {
      if (f.burn < 1.0 - 1e-9) {
        if (f.fuel[1] === 0) return
        f.burn += FUEL_VALUE[f.fuel[0]]
        f.fuel[1] -= 1
      }
      const out = SMELTING[f.input[0]]
      if (f.output[1] && f.output[0] !== out) return
      f.input[1] -= 1; f.burn -= 1.0
      f.output[0] = out; f.output[1] += 1
    }
  }

  serv.commands.add({
    base: 'wc',
    info: 'workcell operation',
    usage: '/wc <op> <json>',
    onlyPlayer: true,
    parse (str) {
      const i = str.indexOf(' ')
      return i < 0 ? { op: str, args: {} } : { op: str.slice(0, i), args: JSON.parse(str.slice(i + 1)) }
    },
    async action ({ op, args }, ctx) {
      const p = ctx.player
      let reply
      try {
        if (!ops[op]) throw new Refused(`unknown workcell op ${op}`)
        // Position packets are applied asynchronously too: act only once the server has the
        // player where its client says it stands, then check reach against the server's copy.
        if (args.at && !await until(() => Math.hypot(p.position.x - args.at[0], p.position.z - args.at[1]) < 0.01, 3000)) {
          throw new Refused(`${p.username}'s position did not reach the server`)
        }
        reply = { seq: args.seq, ok: true, result: await ops[op](p, args) }
      } catch (e) {
        if (!(e instanceof Refused)) process.stderr.write(`workcell ${op}: ${e.stack}\n`)
        reply = { seq: args.seq, ok: false, error: e.message, refused: e instanceof Refused }
      }
      p.system('WC#' + JSON.stringify(reply))
    }
  })

  // flying-squid's login ends by sending the player back to where it logged in, once the
  // client's first flying or look packet is in (login.js: waitPlayerLogin, sendSelfPosition).
  // Mineflayer spawns before that, so a reset's teleport could be undone on the server and the
  // bot alike: under load the bot's first flying packet lands after the teleport. A packet that
  // came before flying-squid began to wait was missed, too: the login then ended on the idle
  // bot's next flying packet, the one its next teleport makes. So any movement packet, one
  // already in included, ends the wait, and teleports wait for the login's end (loggedIn).
  serv.on('newPlayer', (p) => {
    let moved
    const firstMove = new Promise(resolve => { moved = resolve })
    const seen = () => { for (const m of MOVES) p._client.removeListener(m, seen); moved() }
    for (const m of MOVES) p._client.on(m, seen)
    p.waitPlayerLogin = () => firstMove
    const login = p.login // called right after newPlayer
    p.login = () => (p.loggedIn = login.call(p))
  })

  // A source block is an endless resource node: a client dig on it is cancelled server-side, the
  // drop goes straight into the digger's inventory and the block is re-sent to the client (which
  // had already removed it locally). Only the dig-start packet counts: a creative client also
  // sends a finish packet for the same dig, and flying-squid handles the two concurrently.
  serv.on('newPlayer', (p) => {
    p.on('dug_cancel', (data, cancel) => {
      const src = Object.values(cell.locations).find(l => l.kind === 'source' &&
        l.pos[0] === data.position.x && l.pos[1] === data.position.z && data.position.y === GROUND_Y)
      if (!src) return
      cancel(false)
      if (data.drops === undefined) { // creative dig start (a finish packet carries `drops`)
        const [drop, tool] = BLOCK_DROPS[src.block]
        if (tool !== 'pickaxe' || PICKAXES.some(t => count(p, t) > 0)) give(p, drop, 1)
        cell.credits++
        cell.digs[p.username] = (cell.digs[p.username] || 0) + 1
      }
      p.sendBlock(data.position, stateOf(src.block))
    })
  })

  // ------------------------------------------------------------ control (from the launcher)
  serv.workcellControl = {
    async reset (layout) {
      for (const name of Object.keys(layout.agents)) await loggedIn(name)
      for (const pos of cell.placed) await setBlock(pos, 'air')
      for (const loc of Object.values(cell.locations)) await setBlock(blockPos(loc), 'air')
      Object.assign(cell, { locations: layout.locations, modes: {}, chests: {}, ground: [], built: [], furnaces: {}, openChest: {}, placed: [], credits: 0, digs: {}, placing: {} })
      for (const [name, loc] of Object.entries(layout.locations)) {
        const block = loc.kind === 'chest' ? 'chest' : (loc.block || null) // sites stay empty
        if (block) await setBlock(blockPos(loc), block)
        if (loc.kind === 'station' && loc.block === 'furnace') cell.furnaces[name] = { input: ['', 0], fuel: ['', 0], output: ['', 0], burn: 0 }
      }
      for (const [name, items] of Object.entries(layout.containers)) cell.chests[name] = { ...items }
      for (const [name, a] of Object.entries(layout.agents)) {
        const p = player(name)
        cell.modes[name] = a.mode
        setInventory(p, a.inventory)
        await p.teleport(new Vec3(a.pos[0] + 0.5, GROUND_Y, a.pos[1] + 0.5))
      }
      return { locations: Object.keys(cell.locations).length }
    },
    async place (agents) { // teleport agents again to [x, z] (block centres), nothing else reset
      for (const [name, pos] of Object.entries(agents)) {
        await (await loggedIn(name)).teleport(new Vec3(pos[0], GROUND_Y, pos[1]))
      }
      return { placed: Object.keys(agents).length }
    },
    state () {
      const agents = {}
      for (const p of serv.players) {
        agents[p.username] = { pos: [p.position.x, p.position.z], inventory: inventory(p), mode: cell.modes[p.username] || 'GENERAL' }
      }
      return { agents, containers: cell.chests, built: cell.built, ground: cell.ground, credits: cell.credits }
    },
    async blocks (positions) { // block names in the server's own world, for tests
      return Promise.all(positions.map(async ([x, y, z]) => (await serv.overworld.getBlock(new Vec3(x, y, z))).name))
    },
    recipes (items) {
      const out = {}
      for (const item of items) out[item] = recipeVariants(item)
      return out
    }
  }
}

// flying-squid 1.12 reads the 1.21.4 window click in an older shape: it hands the packet to
// prismarine-windows, which expects the clicked slot's item in it (pre-1.17 packets carried it;
// 1.21 sends the client's predicted result instead), so every inventory click, and with it
// Mineflayer's `equip`, was a silent no-op on the server. Give the click the server's own item
// before flying-squid's listener applies it. It also writes two 1.21.4 packets in older shapes: teleports lack the fields added in
// 1.21.2 (velocity, relative flags), so the serializer throws and drops the client; the login
// packet's game mode sits where 1.20.2+ clients no longer read it (in worldState). Fix both.
const TELEPORT_PACKETS = new Set(['entity_teleport', 'position'])
const GAME_MODES = ['survival', 'creative', 'adventure', 'spectator']
module.exports.player = function (player) {
  player._client.prependListener('window_click', (click) => {
    if (click.windowId === 0 && click.slot >= 0 && click.item === undefined) click.item = player.inventory.slots[click.slot] || null
  })
  const write = player._client.write.bind(player._client)
  player._client.write = (name, params) => {
    if (TELEPORT_PACKETS.has(name)) params = { dx: 0, dy: 0, dz: 0, ...params, flags: params.flags ?? 0 }
    if (name === 'login' && params.worldState) {
      params = { ...params, worldState: { ...params.worldState, gamemode: GAME_MODES[params.gameMode] } }
    }
    return write(name, params)
  }
}
