// The page's settings (settings.js loads them with their defaults), owned here: modules read
// `store.state` and change it only through `set` (top-level fields) and `setPane` (one pane's
// choices); each change reaches the subscribers (main.js saves the settings so).

export function createStore(state) {
  const listeners = new Set();
  const changed = () => listeners.forEach((listener) => listener(state));
  return {
    state,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    set(change) {
      Object.assign(state, change);
      changed();
    },
    setPane(index, change) {
      Object.assign(state.panes[index], change);
      changed();
    },
  };
}
