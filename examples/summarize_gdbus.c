/* A seqgptd client in C with GLib's GDBus, as a document reader's plugin (Evince, Papers,
 * Zathura, ...) would write it.
 *
 *   cc -o summarize_gdbus examples/summarize_gdbus.c $(pkg-config --cflags --libs gio-unix-2.0)
 *   ./summarize_gdbus FILE.pdf [short|medium|long] [--system | --address ADDR]
 *
 * The order that avoids races:
 *
 * 1. choose a handle_token and compute the job's path from it and this connection's unique
 *    name (/org/seqgpt/Summarizer1/jobs/SENDER/TOKEN, SENDER without ':' and with '_' for
 *    '.'), then subscribe to that path's signals *before* the call: nothing can be missed;
 * 2. pass the open file as a Unix file descriptor (SummarizeFd): the daemon never needs the
 *    path, which also works with the system-bus daemon and with a memfd;
 * 3. follow Progress and Partial in the main loop until Finished or Failed;
 * 4. watch the daemon's name: if it leaves the bus before the job ends, no Finished or Failed
 *    will ever come, so stop waiting;
 * 5. a plugin that closes the document calls Cancel on the job (or simply disconnects: the
 *    daemon cancels a departed client's jobs).
 *
 * The interface is installed as /usr/share/dbus-1/interfaces/org.seqgpt.Summarizer1.xml, for
 * gdbus-codegen; this example uses plain GDBus calls so that it stands alone. Copy it freely
 * (it is part of seqgpt-fast, Apache-2.0).
 */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC */
#include <fcntl.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NAME "org.seqgpt.Summarizer1"
#define PATH "/org/seqgpt/Summarizer1"
#define JOB_IFACE "org.seqgpt.Job1"
#define TOKEN "gdbus_example"

typedef struct {
  GMainLoop *loop;
  char *job_path;
  int exit_code;
  gboolean ended;
} State;

static void end(State *st, int code) {
  if (!st->ended) {
    st->ended = TRUE;
    st->exit_code = code;
    g_main_loop_quit(st->loop);
  }
}

/* 3. The job's signals: they are unicast to this connection, on the path computed below. */
static void on_job_signal(GDBusConnection *bus, const char *sender, const char *path, const char *iface,
                          const char *member, GVariant *params, gpointer data) {
  State *st = data;
  if (g_strcmp0(member, "Progress") == 0) {
    const char *stage;
    guint32 done, total;
    g_variant_get(params, "(&suu)", &stage, &done, &total);
    fprintf(stderr, "\r%s: %u/%u   ", stage, done, total);
  } else if (g_strcmp0(member, "Partial") == 0) {
    /* A plugin would append the text to a live preview. */
  } else if (g_strcmp0(member, "Finished") == 0) {
    const char *summary;
    g_autoptr(GVariant) stats = NULL;
    g_variant_get(params, "(&s@a{sv})", &summary, &stats);
    const char *method = "?";
    g_variant_lookup(stats, "method", "&s", &method);
    /* Every sentence's page and boxes, for jumping to it and highlighting it. */
    g_autoptr(GVariant) anchors = g_variant_lookup_value(stats, "anchors", G_VARIANT_TYPE("a(suuua(dddd))"));
    fprintf(stderr, "\n[method: %s, %zu anchored sentences]\n", method, anchors ? g_variant_n_children(anchors) : 0);
    printf("%s\n", summary);
    end(st, 0);
  } else if (g_strcmp0(member, "Failed") == 0) {
    const char *name, *message;
    g_variant_get(params, "(&s&s)", &name, &message);
    fprintf(stderr, "\nerror: %s: %s\n", name, message);
    end(st, 1);
  }
}

/* 4. The daemon left the bus. */
static void on_vanished(GDBusConnection *bus, const char *name, gpointer data) {
  State *st = data;
  if (st->job_path != NULL) {
    fprintf(stderr, "\nerror: the daemon left the bus before the job ended\n");
    end(st, 1);
  }
}

static void on_appeared(GDBusConnection *bus, const char *name, const char *owner, gpointer data) {}

/* The reply to SummarizeFd: the job's path (the one computed), or why it was refused. */
static void on_started(GObject *source, GAsyncResult *res, gpointer data) {
  State *st = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GVariant) reply =
      g_dbus_connection_call_with_unix_fd_list_finish(G_DBUS_CONNECTION(source), NULL, res, &error);
  if (reply == NULL) {
    g_autofree char *name = g_dbus_error_get_remote_error(error);
    g_dbus_error_strip_remote_error(error);
    fprintf(stderr, "error: %s: %s\n", name ? name : "?", error->message);
    end(st, 1);
    return;
  }
  const char *job;
  g_variant_get(reply, "(&o)", &job);
  if (g_strcmp0(job, st->job_path) != 0) {
    fprintf(stderr, "error: the daemon answered %s, not %s (an interface version before 2?)\n", job, st->job_path);
    end(st, 1);
  }
}

int main(int argc, char **argv) {
  const char *file = NULL, *length = "medium", *address = NULL;
  gboolean system = FALSE;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--system") == 0) {
      system = TRUE;
    } else if (strcmp(argv[i], "--address") == 0 && i + 1 < argc) {
      address = argv[++i];
    } else if (file == NULL) {
      file = argv[i];
    } else {
      length = argv[i];
    }
  }
  if (file == NULL) {
    fprintf(stderr, "usage: %s FILE.pdf [short|medium|long] [--system | --address ADDR]\n", argv[0]);
    return 2;
  }

  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) bus = NULL;
  if (address != NULL) {
    bus = g_dbus_connection_new_for_address_sync(
        address, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL,
        NULL, &error);
  } else {
    bus = g_bus_get_sync(system ? G_BUS_TYPE_SYSTEM : G_BUS_TYPE_SESSION, NULL, &error);
  }
  if (bus == NULL) {
    fprintf(stderr, "error: cannot connect to the bus: %s\n", error->message);
    return 1;
  }

  State st = {.loop = g_main_loop_new(NULL, FALSE), .exit_code = 1};

  /* 1. The job's path, known before the call. */
  g_autofree char *sender = g_strdup(g_dbus_connection_get_unique_name(bus) + 1);
  g_strdelimit(sender, ".", '_');
  st.job_path = g_strdup_printf(PATH "/jobs/%s/%s", sender, TOKEN);
  guint sub = g_dbus_connection_signal_subscribe(bus, NAME, JOB_IFACE, NULL, st.job_path, NULL,
                                                 G_DBUS_SIGNAL_FLAGS_NONE, on_job_signal, &st, NULL);
  guint watch = g_bus_watch_name_on_connection(bus, NAME, G_BUS_NAME_WATCHER_FLAGS_AUTO_START, on_appeared,
                                               on_vanished, &st, NULL);

  /* 2. The file as a descriptor; the 'h' argument is its index in the list. */
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    perror(file);
    return 1;
  }
  g_autoptr(GUnixFDList) fds = g_unix_fd_list_new();
  int index = g_unix_fd_list_append(fds, fd, &error);
  close(fd); /* the list holds its own duplicate */
  if (index < 0) {
    fprintf(stderr, "error: %s\n", error->message);
    return 1;
  }
  GVariantBuilder options;
  g_variant_builder_init(&options, G_VARIANT_TYPE("a{sv}"));
  g_variant_builder_add(&options, "{sv}", "length", g_variant_new_string(length));
  g_variant_builder_add(&options, "{sv}", "handle_token", g_variant_new_string(TOKEN));
  g_dbus_connection_call_with_unix_fd_list(bus, NAME, PATH, NAME, "SummarizeFd",
                                           g_variant_new("(ha{sv})", index, &options), G_VARIANT_TYPE("(o)"),
                                           G_DBUS_CALL_FLAGS_NONE, -1, fds, NULL, on_started, &st);

  g_main_loop_run(st.loop);

  g_dbus_connection_signal_unsubscribe(bus, sub);
  g_bus_unwatch_name(watch);
  g_main_loop_unref(st.loop);
  g_free(st.job_path);
  return st.exit_code;
}
