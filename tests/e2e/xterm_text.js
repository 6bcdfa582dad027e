(el) => {
  const isTerm = (o) => o && typeof o === "object" && o.buffer && o.buffer.active && typeof o.buffer.active.getLine === "function";
  const seen = new Set();
  const search = (o, depth) => {
    if (!o || typeof o !== "object" || depth > 3 || seen.has(o)) return null;
    seen.add(o);
    if (isTerm(o)) return o;
    for (const k of Object.keys(o)) {
      if (k === "return" || k === "child" || k === "sibling" || k === "stateNode" || k === "_owner") continue;
      let v; try { v = o[k]; } catch { continue; }
      const f = search(v, depth + 1);
      if (f) return f;
    }
    return null;
  };
  let node = el;
  while (node) {
    const key = Object.keys(node).find((k) => k.startsWith("__reactFiber"));
    if (key) {
      let fiber = node[key];
      while (fiber) {
        let hook = fiber.memoizedState;
        while (hook && typeof hook === "object" && "next" in hook) {
          const f = search(hook.memoizedState, 0);
          if (f) { const b = f.buffer.active; const out = []; for (let i = 0; i < b.length; i++) out.push(b.getLine(i).translateToString(true)); return out.join("\n"); }
          hook = hook.next;
        }
        const f = search(fiber.memoizedProps, 0);
        if (f) { const b = f.buffer.active; const out = []; for (let i = 0; i < b.length; i++) out.push(b.getLine(i).translateToString(true)); return out.join("\n"); }
        fiber = fiber.return;
      }
      return null;
    }
    node = node.parentElement;
  }
  return null;
}
