"""Every adaptation of a library's behaviour (database backends, channel layers, hot-path SQL,
server patches); UPSTREAM.md names each private name relied on."""
