def f(state):
    while True:
        state = advance(state)
        if state.done:
            break
        if state.bad:
            return None
    return state.value
