def f(sentence):
    for part in sentence.split(" ")[::-1]:
        try:
            answer = float(part)
            return answer
        except:
            continue
