"""TextToSpeech (OPAL §6): an LLM writes the sections of a script independently, each section is
synthesised to audio by a TTS tool, and the clips are played in order on one speaker.
Parallelism: every section's generation and synthesis; playback stays in program order."""
import asyncio

from poppy_jit import poppy
from poppy_jit.bench.ext import allm, asynthesize, llm, play, synthesize

PARAMS = {"topic": "a guided tour of the night sky in winter", "sections": 6}


@poppy
def text_to_speech(topic, sections):
    for i in range(sections):
        text = llm(f"tts.section: {topic} | part {i + 1} of {sections}")
        clip = synthesize(text)
        position = play(clip)
        print(f"part {i + 1}: {len(text.split())} words, clip {clip.split(' ')[0]} #{position}")
    return sections


def run(topic, sections):
    return text_to_speech(topic, sections)


async def _section(topic, i, sections):
    text = await allm(f"tts.section: {topic} | part {i + 1} of {sections}")
    return text, await asynthesize(text)


async def run_manual(topic, sections):
    done = await asyncio.gather(*(_section(topic, i, sections) for i in range(sections)))
    for i, (text, clip) in enumerate(done):
        position = play(clip)
        print(f"part {i + 1}: {len(text.split())} words, clip {clip.split(' ')[0]} #{position}")
    return sections
