#!/usr/bin/env python3
"""A seqgptd client for a document-reader plugin, with GLib/Gio (Debian: python3-gi).

    python3 examples/summarize_gio.py FILE.pdf [--length short|medium|long] [--address ADDR]
    python3 examples/summarize_gio.py --text FILE.txt

It does what a plugin should do, in the order that avoids races:

1. subscribe to the job signals of org.seqgpt.Summarizer1 (sent to this connection only)
   *before* calling, so that no Progress/Partial/Finished can be missed;
2. call SummarizeFd with the open file passed as a Unix file descriptor (the daemon never
   needs the path: this also works with the system-bus daemon, and with a memfd when the
   document is only in memory);
3. follow Progress and Partial until Finished or Failed, without blocking the UI (the GLib
   main loop);
4. watch the daemon's name: if it goes away (crash, restart) before the job ends, no
   Finished or Failed will ever come, so report that instead of waiting forever;
5. on close, call Cancel (or simply disconnect: the daemon cancels a departed client's jobs).

Copy it freely (it is part of seqgpt-fast, Apache-2.0).
"""

import argparse
import os
import sys

from gi.repository import Gio, GLib

NAME = "org.seqgpt.Summarizer1"
PATH = "/org/seqgpt/Summarizer1"
JOB_IFACE = "org.seqgpt.Job1"


class Summary:
    def __init__(self, bus, on_progress, on_partial, on_done):
        self.bus = bus
        self.job = None
        self.early = []  # signals that arrived before the job's path was known
        self.on_progress, self.on_partial, self.on_done = on_progress, on_partial, on_done
        # 1. Every job signal from the daemon. They are unicast to us, so this sees ours only.
        self.sub = bus.signal_subscribe(
            NAME, JOB_IFACE, None, None, None, Gio.DBusSignalFlags.NONE, self._signal
        )
        # 4. The daemon leaving the bus (or the bus closing) ends the wait.
        self.owner = None
        self.ended = False
        self.watch = bus.signal_subscribe(
            "org.freedesktop.DBus", "org.freedesktop.DBus", "NameOwnerChanged", "/org/freedesktop/DBus",
            NAME, Gio.DBusSignalFlags.NONE, self._owner_changed,
        )
        bus.connect("closed", lambda *_: self._gone("the connection to the bus was closed"))

    def start_fd(self, path, options):
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        fds = Gio.UnixFDList.new()
        index = fds.append(fd)
        os.close(fd)  # the list holds its own duplicate
        # 2. The 'h' argument is an index into the descriptor list sent with the call.
        self.bus.call_with_unix_fd_list(
            NAME, PATH, NAME, "SummarizeFd",
            GLib.Variant("(ha{sv})", (index, options)),
            GLib.VariantType("(o)"), Gio.DBusCallFlags.NONE, -1, fds, None, self._started_fd,
        )

    def start_text(self, text, options):
        self.bus.call(
            NAME, PATH, NAME, "SummarizeText",
            GLib.Variant("(sa{sv})", (text, options)),
            GLib.VariantType("(o)"), Gio.DBusCallFlags.NONE, -1, None, self._started,
        )

    def cancel(self):
        if self.job:
            self.bus.call_sync(NAME, self.job, JOB_IFACE, "Cancel", None, None, Gio.DBusCallFlags.NONE, -1, None)

    def _started_fd(self, bus, result):
        try:
            reply, _fds = bus.call_with_unix_fd_list_finish(result)
        except GLib.Error as e:
            return self._refused(e)
        self._accepted(reply)

    def _started(self, bus, result):
        try:
            reply = bus.call_finish(result)
        except GLib.Error as e:
            return self._refused(e)
        self._accepted(reply)

    def _refused(self, e):
        # Busy (org.freedesktop.DBus.Error.LimitsExceeded), InvalidArgs, TooLarge, ...
        name = Gio.DBusError.get_remote_error(e) or ""
        message = e.message
        prefix = "GDBus.Error:%s: " % name
        if message.startswith(prefix):
            message = message[len(prefix):]
        self._end(None, None, name, message)

    def _accepted(self, reply):
        self.job = reply.unpack()[0]
        # The daemon that answered (its unique name) is the one whose departure ends the wait.
        try:
            self.owner = self.bus.call_sync(
                "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner",
                GLib.Variant("(s)", (NAME,)), GLib.VariantType("(s)"), Gio.DBusCallFlags.NONE, -1, None,
            ).unpack()[0]
        except GLib.Error:
            return self._gone("the daemon left the bus")
        for path, member, params in self.early:
            self._dispatch(path, member, params)
        self.early = []

    def _owner_changed(self, bus, sender, path, iface, member, params):
        name, old, new = params.unpack()
        if name == NAME and self.owner is not None and old == self.owner and new != self.owner:
            self._gone("the daemon left the bus before the job ended")

    def _gone(self, why):
        self._end(None, None, "org.freedesktop.DBus.Error.NoReply", why)

    def _end(self, summary, stats, error_name, message):
        if self.ended:
            return
        self.ended = True
        self.bus.signal_unsubscribe(self.sub)
        self.bus.signal_unsubscribe(self.watch)
        self.on_done(summary, stats, error_name, message)

    def _signal(self, bus, sender, path, iface, member, params):
        if self.job is None:
            self.early.append((path, member, params))
        else:
            self._dispatch(path, member, params)

    def _dispatch(self, path, member, params):
        if path != self.job:
            return
        args = params.unpack()
        if member == "Progress":
            self.on_progress(*args)
        elif member == "Partial":
            self.on_partial(*args)
        elif member == "Finished":
            summary, stats = args
            self._end(summary, stats, None, None)
        elif member == "Failed":
            self._end(None, None, args[0], args[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--text", action="store_true", help="FILE is UTF-8 text, not a PDF")
    ap.add_argument("--length", default="medium", choices=["short", "medium", "long"])
    ap.add_argument("--pages", help="N or A-B")
    ap.add_argument("--password")
    ap.add_argument("--address", help="a private bus (default: the session bus)")
    ap.add_argument("--system", action="store_true", help="the system bus")
    a = ap.parse_args()

    if a.address:
        flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
        bus = Gio.DBusConnection.new_for_address_sync(a.address, flags, None, None)
    else:
        bus = Gio.bus_get_sync(Gio.BusType.SYSTEM if a.system else Gio.BusType.SESSION, None)

    options = {"length": GLib.Variant("s", a.length)}
    if a.pages:
        options["pages"] = GLib.Variant("s", a.pages)
    if a.password:
        options["password"] = GLib.Variant("s", a.password)

    loop = GLib.MainLoop()
    outcome = {"code": 0}

    def progress(stage, done, total):
        print(f"\r{stage}: {done}/{total}   ", end="", file=sys.stderr, flush=True)

    def partial(index, text):
        pass  # a plugin would append `text` to a live preview of prompt `index`

    def done(summary, stats, error_name, message):
        print(file=sys.stderr)
        if summary is not None:
            print(summary)
            print(f"[method: {stats['method']}, {stats['elapsed_ms']} ms, cached: {stats['cached']}]", file=sys.stderr)
        else:
            print(f"error: {error_name}: {message}", file=sys.stderr)
            outcome["code"] = 1
        loop.quit()

    s = Summary(bus, progress, partial, done)
    if a.text:
        with open(a.file, encoding="utf-8") as f:
            s.start_text(f.read(), options)
    else:
        s.start_fd(a.file, options)
    try:
        loop.run()
    except KeyboardInterrupt:
        s.cancel()
        outcome["code"] = 130
    sys.exit(outcome["code"])


if __name__ == "__main__":
    main()
