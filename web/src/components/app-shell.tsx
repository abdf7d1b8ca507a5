/** The signed-in layout: header (brand, live state, user), side navigation, and the page. */
import { Outlet } from 'react-router';
import { SideNav } from './side-nav';
import { LiveIndicator } from './live-indicator';
import { UserMenu } from './user-menu';
import { useState } from 'react';

export function AppShell() {
  const [menuOpen, setMenuOpen] = useState(false);
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <button
          type="button"
          className="menu-button"
          aria-expanded={menuOpen}
          aria-controls="side-nav"
          onClick={() => setMenuOpen((o) => !o)}
        >
          <span aria-hidden="true">☰</span>
          <span className="visually-hidden">Menu</span>
        </button>
        <span className="brand">
          <span className="brand-mark" aria-hidden="true" />
          Drover
        </span>
        <span className="topbar-spacer" />
        <LiveIndicator />
        <UserMenu />
      </header>
      <SideNav open={menuOpen} onNavigate={() => setMenuOpen(false)} />
      <main id="main" className="main" tabIndex={-1}>
        <Outlet />
      </main>
    </div>
  );
}
