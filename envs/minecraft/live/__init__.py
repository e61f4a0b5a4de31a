"""Live Minecraft backend for GenCoord: flying-squid server + Mineflayer bots on 127.0.0.1.

`runtime.LiveRuntime` starts the Node processes (server.js with the workcell plugin, bots.js)
and hands out `live_world.LiveWorld` objects with the simulator's `World` interface, so the
compiler's action lists and the verifier run unchanged against the live server.
"""
