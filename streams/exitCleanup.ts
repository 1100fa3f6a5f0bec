/**
 * What a process must undo however it ends: a private nats-server it started, the temporary
 * directory that server keeps its store in, a pid file, helpers still running. The ordinary way
 * (a graceful stop) undoes them asynchronously and removes the task; this is the backstop for
 * the other ways: `process.exit()` on a second signal, an uncaught exception, an unhandled
 * rejection. Node runs `exit` listeners synchronously and then ends, so every task is synchronous
 * (a signal sent, a directory removed with `rmSync`). SIGKILL cannot be caught, and a signal with
 * no handler ends the process without an `exit` event: the commands handle SIGINT and SIGTERM.
 */

const tasks = new Set<() => void>();
let listening = false;

function runAll(): void {
  for (const task of [...tasks]) {
    tasks.delete(task);
    try {
      task();
    } catch {
      // The process is ending: one task failing must not keep the others from running.
    }
  }
}

/**
 * Runs `task` synchronously when the process exits while it is still registered. Returns the
 * function that unregisters it: call it once the thing has been cleaned up the ordinary way.
 */
export function cleanUpOnExit(task: () => void): () => void {
  if (!listening) {
    listening = true;
    process.on('exit', runAll);
  }
  tasks.add(task);
  return () => void tasks.delete(task);
}

/** How many tasks are registered (for specs). */
export function pendingExitCleanups(): number {
  return tasks.size;
}
